package io.chatintake.work;

import java.time.Duration;
import java.util.List;

/**
 * What one lane claim took: its runs, how many due lanes it looked at (some may have had nothing
 * due), and how long the lane due longest among them had been due: how long work waits here.
 */
public record Claimed(List<WorkRun> runs, int lanesLooked, Duration longestDue) {
    public int items() {
        return runs.stream().mapToInt(r -> r.items().size()).sum();
    }
}
