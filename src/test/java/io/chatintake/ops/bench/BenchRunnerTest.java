package io.chatintake.ops.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/** How the benches read a JVM's heap. */
class BenchRunnerTest {
    /** Kept reachable while the heap is read: it must be counted. */
    private static byte[] held;

    @Test
    void theHeapLeftByCollectionCountsWhatIsReachableAndNotWhatWasDropped() throws Exception {
        long before = BenchRunner.heapLeftByCollection(ManagementFactory.getPlatformMBeanServer());
        held = new byte[64 << 20];
        for (int i = 0; i < 64; i++) {
            byte[] dropped = new byte[1 << 20];
            dropped[0] = 1;
        }
        long holding = BenchRunner.heapLeftByCollection(ManagementFactory.getPlatformMBeanServer());
        held = null;
        long after = BenchRunner.heapLeftByCollection(ManagementFactory.getPlatformMBeanServer());

        assertThat(holding - before).as("the 64 MB kept, not the 64 MB dropped").isBetween(56L << 20, 90L << 20);
        assertThat(holding - after).isBetween(56L << 20, 90L << 20);
    }

    @Test
    void whatAFinalizableObjectHeldIsNotCountedOnceItIsDropped() throws Exception {
        long before = BenchRunner.heapLeftByCollection(ManagementFactory.getPlatformMBeanServer());
        new Finalizable(new byte[64 << 20]).hashCode();
        long after = BenchRunner.heapLeftByCollection(ManagementFactory.getPlatformMBeanServer());

        assertThat(after - before).as("the 64 MB behind a dropped finalizable object").isLessThan(8L << 20);
    }

    /** Like javac's zip file system: its finalizer keeps what it holds through one more collection. */
    private static final class Finalizable {
        private final byte[] held;

        Finalizable(byte[] held) {
            this.held = held;
        }

        @Override
        @SuppressWarnings({"deprecation", "removal"})
        protected void finalize() {
            held[0] = 1;
        }
    }
}
