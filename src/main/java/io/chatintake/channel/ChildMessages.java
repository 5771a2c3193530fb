package io.chatintake.channel;

import io.chatintake.album.AlbumKey;
import io.chatintake.album.QuietPeriods;
import io.chatintake.attachment.AttachmentStore;
import io.chatintake.message.ChildMessageListener;
import java.util.List;

/**
 * What every channel's intake tells when it stores child messages, in the same transaction: their
 * attachments are recorded, then their albums scheduled. One composition for the runner, the
 * benchmarks and the tests, so none of them stores children differently from the others.
 */
public final class ChildMessages {
    private ChildMessages() {
    }

    public static ChildMessageListener listener(QuietPeriods quietPeriods) {
        return ChildMessageListener.all(List.of(AttachmentStore.RECORDER, AlbumKey.scheduler(quietPeriods)));
    }

    /** {@link #listener(QuietPeriods)} with the default quiet periods. */
    public static ChildMessageListener listener() {
        return listener(QuietPeriods.DEFAULTS);
    }
}
