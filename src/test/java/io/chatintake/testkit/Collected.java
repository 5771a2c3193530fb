package io.chatintake.testkit;

import java.lang.ref.WeakReference;
import java.time.Duration;

/** Garbage collection, for tests of what must outlive it (objects held weakly by a library). */
public final class Collected {
    private Collected() {
    }

    /** Returns once an object reachable only weakly has been collected. */
    public static void atLeastOnce() {
        WeakReference<Object> canary = new WeakReference<>(new Object());
        Await.until("a garbage collection", Duration.ofSeconds(30), () -> {
            System.gc();
            return canary.get() == null;
        });
    }
}
