package io.chatintake.store;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * Splits rows for set-based upserts into consecutive runs in which no key occurs twice: one
 * {@code INSERT ... ON CONFLICT DO UPDATE} may not touch a row twice, and the second write of a
 * key must see the first. Runs keep the rows' order, so what the rows schedule keeps it too;
 * rows with distinct keys (the usual case) make one run.
 */
public final class UpsertRuns {
    private UpsertRuns() {
    }

    /** The positions of {@code rows}, run by run; a row's keys are the values of {@code keys} (nulls are no key). */
    @SafeVarargs
    public static <T> List<List<Integer>> of(List<T> rows, Function<T, ?>... keys) {
        List<List<Integer>> runs = new ArrayList<>();
        Set<Object> inRun = new HashSet<>();
        for (int i = 0; i < rows.size(); i++) {
            T row = rows.get(i);
            List<Object> rowKeys = new ArrayList<>();
            for (int k = 0; k < keys.length; k++) {
                Object key = keys[k].apply(row);
                if (key != null) {
                    rowKeys.add(List.of(k, key));
                }
            }
            if (runs.isEmpty() || rowKeys.stream().anyMatch(inRun::contains)) {
                runs.add(new ArrayList<>());
                inRun.clear();
            }
            runs.get(runs.size() - 1).add(i);
            inRun.addAll(rowKeys);
        }
        return runs;
    }
}
