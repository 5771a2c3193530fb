package io.chatintake.work;

import static io.chatintake.work.WorkSql.setSeconds;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;

/**
 * The chats' lanes ({@code work_lane}) as scheduling and claim keeping see them: taken for new
 * work, moved back to items put back to pending, extended while their runs run here, freed when
 * their process went silent. Claiming ({@link LaneClaims}) and finishing runs ({@link FinishRuns})
 * write the lanes they hold themselves.
 */
final class WorkLanes {
    private WorkLanes() {
    }

    /** A lane taken for new work: due now unless it is claimed (then its run's end makes it due). */
    private static final String LANE_DUE = """
            ON CONFLICT (kind, chat_key) DO UPDATE SET due_at = now()
             WHERE work_lane.claim_token IS NULL AND (work_lane.due_at IS NULL OR work_lane.due_at > now())""";

    /**
     * A CTE, {@code lanes}, that takes the lanes of the rows of the relation {@code source} with a
     * chat, in one order (two transactions never wait for each other in a circle), held to commit.
     */
    static String lanesFrom(String source) {
        return """
                lanes AS (
                    INSERT INTO work_lane (kind, chat_key, due_at)
                    SELECT DISTINCT kind, chat_key, now() FROM %s WHERE chat_key IS NOT NULL ORDER BY kind, chat_key
                    %s
                    RETURNING 1)""".formatted(source, LANE_DUE);
    }

    /** A single lane, taken before its item is written (see {@link WorkQueue#scheduleFrom}). */
    static void lock(Connection c, String kind, String chatKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO work_lane (kind, chat_key, due_at) VALUES (?, ?, now()) " + LANE_DUE)) {
            ps.setString(1, kind);
            ps.setString(2, chatKey);
            ps.executeUpdate();
        }
    }

    // Items put back to pending below their lane's head (retry, replay, schedule again): the head
    // moves back to them. A claimed lane gets them when its run is finished (see FinishRuns).
    private static final String REOPEN_LANES = """
            INSERT INTO work_lane (kind, chat_key, due_at, head_id)
            SELECT r.kind, r.chat_key, now(), min(r.id) FROM unnest(?::text[], ?::text[], ?::bigint[]) AS r(kind, chat_key, id)
             WHERE r.chat_key IS NOT NULL GROUP BY r.kind, r.chat_key ORDER BY r.kind, r.chat_key
            ON CONFLICT (kind, chat_key) DO UPDATE SET head_id = LEAST(work_lane.head_id, EXCLUDED.head_id),
                   due_at = CASE WHEN work_lane.claim_token IS NULL THEN now() ELSE work_lane.due_at END""";

    /** Reopens the lanes of items put back to pending. @return how many items were touched */
    static int reopen(Connection c, List<WorkItemRepository.Touched> touched) throws SQLException {
        if (touched.stream().anyMatch(r -> r.chatKey() != null)) {
            try (PreparedStatement ps = c.prepareStatement(REOPEN_LANES)) {
                ps.setArray(1, c.createArrayOf("text", touched.stream().map(WorkItemRepository.Touched::kind).toArray()));
                ps.setArray(2, c.createArrayOf("text", touched.stream().map(WorkItemRepository.Touched::chatKey).toArray()));
                ps.setArray(3, c.createArrayOf("bigint", touched.stream().map(WorkItemRepository.Touched::id).toArray()));
                ps.executeUpdate();
            }
        }
        return touched.size();
    }

    /**
     * Keeps the lanes of runs still running here due only after the claim time from now.
     * SKIP LOCKED: intake may hold one of these lanes while it wants another; waiting here could
     * close a circle. A lane skipped now is extended at the next third.
     */
    static void extend(Connection c, String worker, Collection<Long> tokens, Duration claim) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                UPDATE work_lane SET due_at = now() + make_interval(secs => ?)
                 WHERE (kind, chat_key) IN (SELECT kind, chat_key FROM work_lane
                         WHERE claimed_by = ? AND claim_token = ANY (?::bigint[]) FOR UPDATE SKIP LOCKED)""")) {
            setSeconds(ps, 1, claim);
            ps.setString(2, worker);
            ps.setArray(3, c.createArrayOf("bigint", tokens.toArray()));
            ps.executeUpdate();
        }
    }

    /** Frees the lanes of processes silent for {@code silence}, due now; SKIP LOCKED as in extend: a lane intake holds is freed at the next beat. */
    static void releaseClaimsOfSilentProcesses(Connection c, String self, Duration silence) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                UPDATE work_lane SET due_at = now(), claimed_by = NULL, claim_token = NULL
                 WHERE (kind, chat_key) IN (SELECT kind, chat_key FROM work_lane l
                         WHERE l.claimed_by IS NOT NULL AND""" + " " + RunnerHeartbeat.claimedBySilentProcess("l") + " FOR UPDATE SKIP LOCKED)")) {
            RunnerHeartbeat.bindSilence(ps, 1, self, silence);
            ps.executeUpdate();
        }
    }
}
