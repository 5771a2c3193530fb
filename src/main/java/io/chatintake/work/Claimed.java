package io.chatintake.work;

import java.util.List;

/** What one lane claim took: its runs, and how many due lanes it looked at (some may have had nothing due). */
public record Claimed(List<WorkRun> runs, int lanesLooked) {
    public int items() {
        return runs.stream().mapToInt(r -> r.items().size()).sum();
    }
}
