package io.chatintake.store;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Splits rows for one set-based upsert into rounds in which each key occurs once: one
 * {@code INSERT ... ON CONFLICT DO UPDATE} may not touch a row twice, and the second write of a
 * key must see the first. Round k holds the k-th occurrence of each key, so rows of one key keep
 * their order; rows with distinct keys (the usual case) make one round.
 */
public final class UpsertRounds {
    private UpsertRounds() {
    }

    /** The positions of {@code rows} per round, each round in the rows' order. */
    public static <T> List<List<Integer>> of(List<T> rows, Function<T, ?> key) {
        Map<Object, Integer> seen = new HashMap<>();
        List<List<Integer>> rounds = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            int round = seen.merge(key.apply(rows.get(i)), 1, Integer::sum) - 1;
            if (round == rounds.size()) {
                rounds.add(new ArrayList<>());
            }
            rounds.get(round).add(i);
        }
        return rounds;
    }
}
