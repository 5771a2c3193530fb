package io.chatintake.work;

import java.time.Duration;

/**
 * A thread that turns stored rows into work behind intake: woken by intake, it waits on this
 * object's monitor, which also guards {@link #running} and whatever the subclass keeps of what it
 * was told. A stop lets the transaction in progress finish; what is left stays in storage.
 */
public abstract class SchedulingThread {
    private final Thread thread;
    /** Guarded by this object's monitor. */
    protected boolean running = true;

    protected SchedulingThread(String name) {
        this.thread = new Thread(this::loop, name);
        thread.setDaemon(true);
    }

    /** Called by the subclass once it is constructed. */
    protected final void start() {
        thread.start();
    }

    /** Runs until {@link #running} is false. */
    protected abstract void loop();

    /** Stops after the transaction in progress, if any, waiting for it at most 30 s. */
    public void stop() {
        synchronized (this) {
            running = false;
            notifyAll();
        }
        try {
            thread.join(Duration.ofSeconds(30).toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
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
