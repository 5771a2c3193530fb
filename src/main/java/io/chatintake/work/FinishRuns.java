package io.chatintake.work;

import static io.chatintake.store.Transactions.inRedoableTransaction;
import static io.chatintake.work.WorkSql.tokens;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;

/**
 * Records what workers did with their runs, puts back what they did not run and releases the
 * lanes of runs that end, all in one commit. A lane is due again at once, or, for an ordered run
 * that stopped at a failed item, when that item's retry is due, or idle when nothing of it is left
 * to run. Only outcomes of items that still carry their run's token count (fencing); a run whose
 * claim was lost keeps its lane as it is.
 */
final class FinishRuns {
    // The lanes of runs that end are locked first, in a statement of their own, so that the
    // statement finishing them reads work_item after every intake that held one of them committed
    // (a statement sees what committed before it began, and intake holds a lane until its commit).
    // SKIP LOCKED: intake holds a lane until its commit and may lock several in one transaction;
    // waiting for one while holding others could close a circle. A lane skipped is finished after.
    private static final String LOCK_ENDING_LANES = """
            SELECT u.o FROM unnest(?::text[], ?::text[], ?::bigint[]) WITH ORDINALITY AS u(kind, chat_key, token, o)
              JOIN work_lane l ON l.kind = u.kind AND l.chat_key = u.chat_key AND l.claim_token = u.token
               FOR UPDATE OF l %s""";
    // The head moves past what the run finished, unless retry or replay moved it back meanwhile
    // (then the lane is due now). A lane with nothing unfinished left goes idle until intake makes
    // it due; else it is due now, or when the failed item that stopped an ordered run is.
    static final String FINISH_LANES = """
            UPDATE work_lane l SET due_at = CASE WHEN l.head_id <> u.old_head THEN now() WHEN u.due_in IS NOT NULL THEN now() + make_interval(secs => u.due_in)
                       WHEN EXISTS (SELECT 1 FROM work_item w WHERE w.kind = l.kind AND w.chat_key = l.chat_key AND w.id >= u.new_head
                                       AND w.state NOT IN ('done', 'parked', 'erased')) THEN now() END,
                   head_id = CASE WHEN l.head_id = u.old_head THEN u.new_head ELSE l.head_id END, claimed_by = NULL, claim_token = NULL
              FROM unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::float8[], ?::bigint[])
                   AS u(kind, chat_key, token, old_head, due_in, new_head)
             WHERE l.kind = u.kind AND l.chat_key = u.chat_key AND l.claim_token = u.token
            RETURNING u.token""";

    private final DataSource dataSource;

    FinishRuns(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** @return the tokens of runs whose claim was lost (released or taken over) */
    Set<Long> finish(List<FinishedRun> finished) throws SQLException {
        List<FinishedRun> skipped = new ArrayList<>();
        Set<Long> lost = recordAndRelease(finished, skipped);
        // Each lane intake held a moment ago on its own: a transaction that waits for one lane and
        // holds nothing else cannot be part of a circle. The outcomes are committed already, so a
        // failure here is retried here: recording them again would find them gone and drop the lane.
        for (FinishedRun f : skipped) {
            if (releaseAlone(f).isEmpty()) {
                lost.add(f.run().token());
            }
        }
        return lost;
    }

    private Set<Long> releaseAlone(FinishedRun finished) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            try {
                return inRedoableTransaction(dataSource, c -> finishLanes(c, List.of(finished), false));
            } catch (SQLException e) {
                if (attempt == 3) {
                    throw e;
                }
                try {
                    Thread.sleep(200L * attempt);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    private Set<Long> recordAndRelease(List<FinishedRun> finished, List<FinishedRun> skipped) throws SQLException {
        // The lanes last: their locks, which intake waits for, are held only for the commit.
        return inRedoableTransaction(dataSource, c -> {
            Map<Long, Integer> recorded = WorkItemRepository.recordOutcomes(c, finished);
            Map<Long, Integer> unclaimed = WorkItemRepository.unclaim(c, finished);
            Set<Long> lost = new HashSet<>();
            List<FinishedRun> ending = new ArrayList<>();
            for (FinishedRun f : finished) {
                long token = f.run().token();
                if (recorded.getOrDefault(token, 0) != f.outcomes().size()
                        || unclaimed.getOrDefault(token, 0) != (f.ends() ? f.notRun().size() : 0)) {
                    lost.add(token);
                } else if (f.ends() && f.run().laned()) {
                    ending.add(f);
                }
            }
            Set<Long> released = finishLanes(c, ending, true);
            ending.stream().filter(f -> !released.contains(f.run().token())).forEach(skipped::add);
            return lost;
        });
    }

    /** @return the tokens of the lanes released; with {@code skipLocked}, lanes locked elsewhere right now are left as they are */
    static Set<Long> finishLanes(Connection c, List<FinishedRun> ending, boolean skipLocked) throws SQLException {
        List<FinishedRun> locked = lockEndingLanes(c, ending, skipLocked);
        if (locked.isEmpty()) {
            return Set.of();
        }
        List<Double> dues = new ArrayList<>();
        List<Long> heads = new ArrayList<>();
        for (FinishedRun f : locked) {
            WorkRun run = f.run();
            RunResult last = f.outcomes().isEmpty() ? null : f.outcomes().get(f.outcomes().size() - 1);
            Double due = null;
            long head = run.headId();
            if (last != null && last.isDeferred()) {
                // A limit of the chat (or its bot) holds every item of it until then, in order.
                head = run.ordered() ? last.item().id() : run.headId();
                due = WorkSql.secondsUntil(last.nextAttemptAt());
            } else if (run.ordered() && last != null && last.kind() == RunResult.Kind.FAILED) {
                // The chat waits for this item's retry.
                head = last.item().id();
                due = WorkSql.secondsUntil(last.nextAttemptAt());
            } else if (run.ordered() && !run.items().isEmpty()) {
                // An ordered run is the chat's consecutive items from its head: the head moves past what finished.
                head = f.notRun().isEmpty() ? run.items().get(run.items().size() - 1).id() + 1 : f.notRun().get(0).id();
            }
            dues.add(due);
            heads.add(head);
        }
        try (PreparedStatement ps = c.prepareStatement(FINISH_LANES)) {
            bindLaneTokens(c, ps, locked);
            ps.setArray(4, c.createArrayOf("bigint", locked.stream().map(f -> f.run().headId()).toArray()));
            ps.setArray(5, c.createArrayOf("float8", dues.toArray()));
            ps.setArray(6, c.createArrayOf("bigint", heads.toArray()));
            return new HashSet<>(tokens(ps).keySet());
        }
    }

    /** @return the runs whose lanes this transaction now holds, still carrying their tokens */
    private static List<FinishedRun> lockEndingLanes(Connection c, List<FinishedRun> ending, boolean skipLocked) throws SQLException {
        if (ending.isEmpty()) {
            return List.of();
        }
        List<FinishedRun> locked = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(LOCK_ENDING_LANES.formatted(skipLocked ? "SKIP LOCKED" : ""))) {
            bindLaneTokens(c, ps, ending);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    locked.add(ending.get(rs.getInt(1) - 1));
                }
            }
        }
        return locked;
    }

    /** Parameters 1 to 3: the runs' lanes and tokens. */
    private static void bindLaneTokens(Connection c, PreparedStatement ps, List<FinishedRun> runs) throws SQLException {
        ps.setArray(1, c.createArrayOf("text", runs.stream().map(f -> f.run().kind()).toArray()));
        ps.setArray(2, c.createArrayOf("text", runs.stream().map(f -> f.run().chatKey()).toArray()));
        ps.setArray(3, c.createArrayOf("bigint", runs.stream().map(f -> f.run().token()).toArray()));
    }
}
