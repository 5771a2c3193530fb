package io.chatintake.ops.bench;

import java.time.Duration;
import java.util.List;

/**
 * What {@code bench soak} judges, from the figures of one run: handling keeps up with intake, no
 * item waits long once the first minute (start-up, JIT) is over, everything is done soon after
 * the load ends, and the runner never loses a claim to itself.
 *
 * @param load how long the load ran
 * @param created work items created while it ran
 * @param done work items done while it ran
 * @param worstOldestPendingAfterFirstMinute the oldest pending item's age, the worst seen after the first minute, in seconds
 * @param doneAfterLoad how long after the load ended everything was done; null when it was not within {@link #DRAIN_LIMIT}
 * @param claimsLostToItself the runner's log lines saying a claim of its own was "released or taken over"
 */
record SoakVerdict(Duration load, long created, long done, double worstOldestPendingAfterFirstMinute, Duration doneAfterLoad,
                   long claimsLostToItself) {
    static final double HANDLED_SHARE = 0.95;
    static final double OLDEST_PENDING_LIMIT_SECONDS = 10;
    static final Duration FIRST_MINUTE = Duration.ofMinutes(1);
    static final Duration DRAIN_LIMIT = Duration.ofSeconds(30);

    /** One target: what was measured against what it must be. */
    record Target(String what, String measured, boolean met) {
        String line() {
            return "%-52s %s: %s".formatted(what, measured, met ? "met" : "NOT met");
        }
    }

    double intakeRate() {
        return created / seconds(load);
    }

    double handledRate() {
        return done / seconds(load);
    }

    List<Target> targets() {
        double share = created == 0 ? 1 : (double) done / created;
        return List.of(
                new Target("handled rate >= %.2fx the intake rate".formatted(HANDLED_SHARE),
                        "%.1f/s handled, %.1f/s in: %.3fx".formatted(handledRate(), intakeRate(), share), share >= HANDLED_SHARE),
                new Target("oldest pending <= %.0f s after the first minute".formatted(OLDEST_PENDING_LIMIT_SECONDS),
                        "worst %.1f s".formatted(worstOldestPendingAfterFirstMinute),
                        worstOldestPendingAfterFirstMinute <= OLDEST_PENDING_LIMIT_SECONDS),
                new Target("everything done <= %d s after the load".formatted(DRAIN_LIMIT.toSeconds()),
                        doneAfterLoad == null ? "not within " + DRAIN_LIMIT.toSeconds() + " s" : "in %.1f s".formatted(seconds(doneAfterLoad)),
                        doneAfterLoad != null && doneAfterLoad.compareTo(DRAIN_LIMIT) <= 0),
                new Target("no claim lost to its own runner", claimsLostToItself + " \"released or taken over\" line(s)",
                        claimsLostToItself == 0));
    }

    boolean met() {
        return targets().stream().allMatch(Target::met);
    }

    private static double seconds(Duration duration) {
        return duration.toNanos() / 1e9;
    }
}
