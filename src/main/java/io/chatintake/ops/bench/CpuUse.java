package io.chatintake.ops.bench;

import java.time.Duration;
import java.util.Optional;

/**
 * CPU time spent so far by the bench process (its clients), the runner under test and the
 * database server with its backends, as the operating system counts it. Where a phase's CPU went
 * tells what limits it: on a machine whose cores are all busy, a rate can only rise by spending
 * less CPU per operation. A backend that exits between two readings takes its time with it, so
 * phases are read over pooled connections.
 */
record CpuUse(long benchNanos, long runnerNanos, long databaseNanos) {

    /** Reads all three now; a process the OS does not report on counts as zero. */
    static CpuUse now(ProcessHandle runner, Optional<ProcessHandle> databaseServer) {
        return now(Optional.of(runner), databaseServer);
    }

    /** As {@link #now(ProcessHandle, Optional)}, while no runner is running (the runner counts as zero). */
    static CpuUse now(Optional<ProcessHandle> runner, Optional<ProcessHandle> databaseServer) {
        long database = databaseServer.map(server -> cpu(server) + server.descendants().mapToLong(CpuUse::cpu).sum()).orElse(0L);
        return new CpuUse(cpu(ProcessHandle.current()), runner.map(CpuUse::cpu).orElse(0L), database);
    }

    CpuUse since(CpuUse earlier) {
        return new CpuUse(benchNanos - earlier.benchNanos, runnerNanos - earlier.runnerNanos, databaseNanos - earlier.databaseNanos);
    }

    CpuUse plus(CpuUse other) {
        return new CpuUse(benchNanos + other.benchNanos, runnerNanos + other.runnerNanos, databaseNanos + other.databaseNanos);
    }

    long totalNanos() {
        return benchNanos + runnerNanos + databaseNanos;
    }

    /** e.g. {@code CPU per delivery: bench process 0.054 ms, runner 0.261 ms, PostgreSQL 0.400 ms; 2 cores 81% busy} */
    String describe(int operations, String per, Duration wall) {
        double busy = totalNanos() / (double) wall.toNanos() / Runtime.getRuntime().availableProcessors();
        return String.format("CPU per %s: bench process %.3f ms, runner %.3f ms, PostgreSQL %.3f ms; %d cores %.0f%% busy", per,
                benchNanos / 1e6 / operations, runnerNanos / 1e6 / operations, databaseNanos / 1e6 / operations,
                Runtime.getRuntime().availableProcessors(), 100 * busy);
    }

    private static long cpu(ProcessHandle process) {
        return process.info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
    }
}
