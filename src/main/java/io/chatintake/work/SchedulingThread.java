package io.chatintake.work;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import org.apache.camel.CamelContext;

/**
 * A thread that turns stored rows into work behind intake: woken by intake, it waits on this
 * object's monitor, which also guards {@link #running} and whatever the subclass keeps of what it
 * was told. The thread comes from Camel's ExecutorServiceManager (named, listed by Camel, shut
 * down with the context at the latest). A stop lets the transaction in progress finish; what is
 * left stays in storage.
 */
public abstract class SchedulingThread {
    private static final Duration STOP_WAIT = Duration.ofSeconds(30);

    private final CamelContext camel;
    private final String name;
    private ExecutorService thread;
    /** Guarded by this object's monitor. */
    protected boolean running = true;

    protected SchedulingThread(CamelContext camel, String name) {
        this.camel = camel;
        this.name = name;
    }

    /** Called by the subclass once it is constructed. */
    protected final void start() {
        thread = camel.getExecutorServiceManager().newSingleThreadExecutor(this, name);
        thread.execute(this::loop);
    }

    /** Runs until {@link #running} is false. */
    protected abstract void loop();

    /** Stops after the transaction in progress, if any, waiting for it at most 30 s (then it is interrupted). */
    public void stop() {
        synchronized (this) {
            running = false;
            notifyAll();
        }
        camel.getExecutorServiceManager().shutdownGraceful(thread, STOP_WAIT.toMillis());
    }

    /** Waits on this object's monitor, which the caller holds; an interrupt stops the thread. */
    protected final void waitQuietly(long millis) {
        try {
            wait(millis);
        } catch (InterruptedException e) {
            running = false;
        }
    }
}
