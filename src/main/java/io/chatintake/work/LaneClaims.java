package io.chatintake.work;

import static io.chatintake.store.Transactions.inRedoableTransaction;
import static io.chatintake.work.WorkSql.setSeconds;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * Picks due runs: claims the lanes that have been due longest ({@code FOR UPDATE SKIP LOCKED}, so
 * any number of processes share them), each with a new token, and then their runs' items. For an
 * ordered kind a run is the due prefix from the lane's head (an item waiting for its retry holds
 * the items after it); otherwise every due item among them. A lane with nothing due is set to when
 * it will be (or idle): intake, which locks the lane too, cannot slip items past that.
 */
final class LaneClaims {
    private static final String DUE_LANES = """
            SELECT kind, chat_key, head_id, (extract(epoch FROM now() - due_at) * 1000)::bigint FROM work_lane
             WHERE due_at <= now() AND kind = ANY (?::text[]) ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED""";
    // Each lane's first unfinished items from its head, in id order (the partial index on unfinished
    // items of a chat serves each lane): for an ordered kind all of them, so the first one not due
    // ends the run; otherwise only the due ones.
    private static final String LANES_ITEMS = """
            SELECT l.o, i.id, i.source_key, i.source_id, i.attempts, i.next_attempt_at <= now(), i.next_attempt_at
              FROM unnest(?::text[], ?::text[], ?::bigint[], ?::boolean[]) WITH ORDINALITY AS l(kind, chat_key, head, ordered, o)
             CROSS JOIN LATERAL (SELECT w.id, w.source_key, w.source_id, w.attempts, w.next_attempt_at FROM work_item w
                     WHERE w.kind = l.kind AND w.chat_key = l.chat_key AND w.id >= l.head AND w.state NOT IN ('done', 'parked', 'erased')
                       AND (l.ordered OR w.next_attempt_at <= now())
                     ORDER BY w.id LIMIT ?) i
             ORDER BY l.o, i.id""";
    private static final String LANE_NEXT_DUE = """
            SELECT min(next_attempt_at), min(id) FROM work_item WHERE kind = ? AND chat_key = ? AND id >= ? AND state NOT IN ('done', 'parked', 'erased')""";
    private static final String SET_LANES_ASIDE = """
            UPDATE work_lane l SET due_at = u.due, head_id = u.head
              FROM unnest(?::text[], ?::text[], ?::timestamptz[], ?::bigint[]) AS u(kind, chat_key, due, head)
             WHERE l.kind = u.kind AND l.chat_key = u.chat_key""";
    private static final String CLAIM_LANES = """
            UPDATE work_lane l SET due_at = now() + make_interval(secs => ?), claimed_by = ?, head_id = u.head,
                   claim_token = nextval('work_claim_token')
              FROM unnest(?::text[], ?::text[], ?::bigint[]) WITH ORDINALITY AS u(kind, chat_key, head, o)
             WHERE l.kind = u.kind AND l.chat_key = u.chat_key
            RETURNING u.o, l.claim_token""";

    /** A due lane locked by a claim: what the lane row says, and its first items. */
    private record DueLane(String kind, String chatKey, long head, boolean ordered, List<LaneItem> items) {
    }

    private record LaneItem(WorkItem item, boolean due, Timestamp dueAt) {
    }

    private final DataSource dataSource;
    private final FinishRuns finishing;

    LaneClaims(DataSource dataSource, FinishRuns finishing) {
        this.dataSource = dataSource;
        this.finishing = finishing;
    }

    /**
     * Claims the runs of up to {@code maxLanes} lanes, about {@code runSize} items in all (shared
     * out among the lanes, so one busy chat gets a whole run when it is the only one due).
     * Lanes that turned out to have nothing due were set aside by an attempt: the next one looks further.
     */
    Claimed claim(String worker, Duration claim, int runSize, int maxLanes, Collection<String> orderedKinds,
                  Collection<String> kinds) throws SQLException {
        Claimed claimed = new Claimed(List.of(), 0, Duration.ZERO);
        for (int attempt = 0; attempt < 16 && claimed.runs().isEmpty(); attempt++) {
            claimed = claimOnce(worker, claim, runSize, maxLanes, orderedKinds, kinds);
            if (claimed.lanesLooked() == 0) {
                break;
            }
        }
        return claimed;
    }

    /**
     * The lanes are claimed in one short transaction and their items after it, while the lanes
     * carry the tokens: intake, which waits for a lane's lock, never waits behind the items' claim.
     */
    private Claimed claimOnce(String worker, Duration claim, int runSize, int maxLanes, Collection<String> orderedKinds,
                              Collection<String> kinds) throws SQLException {
        Claimed lanes = inRedoableTransaction(dataSource, c -> claimLanes(c, worker, claim, runSize, maxLanes, orderedKinds, kinds));
        if (lanes.runs().isEmpty()) {
            return lanes;
        }
        Map<Long, Integer> claimed;
        try {
            claimed = inRedoableTransaction(dataSource, c -> WorkItemRepository.claimItems(c, worker, claim, lanes.runs()));
        } catch (SQLException | RuntimeException e) {
            // No worker here will run these lanes: finish them as runs given back whole, now, not
            // when the claim expires minutes later. An item the failed statement did claim after all
            // keeps its claim's expiry as its due time, so the lane's next run waits for it.
            try {
                inRedoableTransaction(dataSource, c -> FinishRuns.finishLanes(c, lanes.runs().stream().map(FinishedRun::givenBack).toList(), false));
            } catch (SQLException | RuntimeException release) {
                e.addSuppressed(release);
            }
            throw e;
        }
        List<WorkRun> held = new ArrayList<>();
        for (WorkRun run : lanes.runs()) {
            if (claimed.getOrDefault(run.token(), 0) == run.items().size()) {
                held.add(run);
            } else {
                // Taken over meanwhile: whatever this claim got goes back (only while it still carries the token).
                finishing.finish(List.of(FinishedRun.givenBack(run)));
            }
        }
        return new Claimed(held, lanes.lanesLooked(), lanes.longestDue());
    }

    private static Claimed claimLanes(Connection c, String worker, Duration claim, int runSize, int maxLanes,
                                      Collection<String> orderedKinds, Collection<String> kinds) throws SQLException {
        List<DueLane> lanes = new ArrayList<>();
        long longestDueMillis = 0;
        try (PreparedStatement ps = c.prepareStatement(DUE_LANES)) {
            ps.setArray(1, c.createArrayOf("text", kinds.toArray()));
            ps.setInt(2, maxLanes);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String kind = rs.getString(1);
                    longestDueMillis = Math.max(longestDueMillis, rs.getLong(4));
                    lanes.add(new DueLane(kind, rs.getString(2), rs.getLong(3), orderedKinds.contains(kind), new ArrayList<>()));
                }
            }
        }
        if (lanes.isEmpty()) {
            return new Claimed(List.of(), 0, Duration.ZERO);
        }
        readLaneItems(c, lanes, Math.max(1, (runSize + lanes.size() - 1) / lanes.size()));
        List<DueLane> withRun = new ArrayList<>();
        List<DueLane> aside = new ArrayList<>();
        for (DueLane lane : lanes) {
            (lane.items().isEmpty() || !lane.items().get(0).due() ? aside : withRun).add(lane);
        }
        setAside(c, aside);
        return new Claimed(claimWithRuns(c, worker, claim, withRun), lanes.size(), Duration.ofMillis(longestDueMillis));
    }

    private static void readLaneItems(Connection c, List<DueLane> lanes, int perLane) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(LANES_ITEMS)) {
            ps.setArray(1, c.createArrayOf("text", lanes.stream().map(DueLane::kind).toArray()));
            ps.setArray(2, c.createArrayOf("text", lanes.stream().map(DueLane::chatKey).toArray()));
            ps.setArray(3, c.createArrayOf("bigint", lanes.stream().map(DueLane::head).toArray()));
            ps.setArray(4, c.createArrayOf("boolean", lanes.stream().map(DueLane::ordered).toArray()));
            ps.setInt(5, perLane);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    DueLane lane = lanes.get(rs.getInt(1) - 1);
                    lane.items().add(new LaneItem(new WorkItem(rs.getLong(2), lane.kind(), rs.getString(3), rs.getLong(4),
                            lane.chatKey(), rs.getInt(5) + 1, 0), rs.getBoolean(6), rs.getTimestamp(7)));
                }
            }
        }
    }

    /** Lanes with nothing due: due when their first item is (null: idle until intake or a retry makes them due). */
    private static void setAside(Connection c, List<DueLane> lanes) throws SQLException {
        if (lanes.isEmpty()) {
            return;
        }
        List<Timestamp> dues = new ArrayList<>();
        List<Long> heads = new ArrayList<>();
        for (DueLane lane : lanes) {
            Timestamp due = lane.items().isEmpty() ? null : lane.items().get(0).dueAt();
            long head = lane.items().isEmpty() ? lane.head() : lane.items().get(0).item().id();
            if (!lane.ordered()) {
                // Only due items were read; the first due item need not be the first unfinished one.
                try (PreparedStatement ps = c.prepareStatement(LANE_NEXT_DUE)) {
                    ps.setString(1, lane.kind());
                    ps.setString(2, lane.chatKey());
                    ps.setLong(3, lane.head());
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        due = rs.getTimestamp(1);
                        head = rs.getObject(2) == null ? lane.head() : rs.getLong(2);
                    }
                }
            }
            dues.add(due);
            heads.add(head);
        }
        try (PreparedStatement ps = c.prepareStatement(SET_LANES_ASIDE)) {
            ps.setArray(1, c.createArrayOf("text", lanes.stream().map(DueLane::kind).toArray()));
            ps.setArray(2, c.createArrayOf("text", lanes.stream().map(DueLane::chatKey).toArray()));
            ps.setArray(3, c.createArrayOf("timestamptz", dues.toArray()));
            ps.setArray(4, c.createArrayOf("bigint", heads.toArray()));
            ps.executeUpdate();
        }
    }

    /** Claims these lanes (each with a new token); their runs (the due prefix, or the due items) are claimed after. */
    private static List<WorkRun> claimWithRuns(Connection c, String worker, Duration claim, List<DueLane> lanes) throws SQLException {
        if (lanes.isEmpty()) {
            return List.of();
        }
        long[] tokens = new long[lanes.size()];
        try (PreparedStatement ps = c.prepareStatement(CLAIM_LANES)) {
            setSeconds(ps, 1, claim);
            ps.setString(2, worker);
            ps.setArray(3, c.createArrayOf("text", lanes.stream().map(DueLane::kind).toArray()));
            ps.setArray(4, c.createArrayOf("text", lanes.stream().map(DueLane::chatKey).toArray()));
            // An ordered lane's head moves to its first unfinished item; an unordered one keeps it.
            ps.setArray(5, c.createArrayOf("bigint", lanes.stream()
                    .map(l -> l.ordered() ? l.items().get(0).item().id() : l.head()).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    tokens[rs.getInt(1) - 1] = rs.getLong(2);
                }
            }
        }
        List<WorkRun> runs = new ArrayList<>(lanes.size());
        for (int i = 0; i < lanes.size(); i++) {
            DueLane lane = lanes.get(i);
            List<WorkItem> run = new ArrayList<>();
            for (LaneItem item : lane.items()) {
                if (!item.due()) {
                    break;
                }
                WorkItem w = item.item();
                run.add(new WorkItem(w.id(), w.kind(), w.sourceKey(), w.sourceId(), w.chatKey(), w.attempts(), tokens[i]));
            }
            long head = lane.ordered() ? run.get(0).id() : lane.head();
            runs.add(new WorkRun(tokens[i], lane.kind(), lane.chatKey(), head, lane.ordered(), List.copyOf(run)));
        }
        return runs;
    }
}
