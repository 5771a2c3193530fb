package io.chatintake.work;

import java.util.List;

/**
 * What a worker did with a claimed run: {@code outcomes} of items it ran and, when the run
 * ends here, {@code notRun}: items it gives back (null: the run goes on, its lane stays claimed).
 */
public record FinishedRun(WorkRun run, List<RunResult> outcomes, List<WorkItem> notRun) {
    /** The whole run given back as it was before its claim. */
    static FinishedRun givenBack(WorkRun run) {
        return new FinishedRun(run, List.of(), run.items());
    }

    boolean ends() {
        return notRun != null;
    }
}
