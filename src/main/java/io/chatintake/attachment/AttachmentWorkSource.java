package io.chatintake.attachment;

import io.chatintake.work.WorkItem;
import io.chatintake.work.WorkSource;
import java.sql.Connection;
import java.sql.SQLException;
import org.apache.camel.Message;

/**
 * Attachment downloads as work: handled by the {@code work:attachment} route (routes/attachments.yaml),
 * so they get the dispatcher's retries with backoff, parking and bounded concurrency. The body is
 * an {@link AttachmentStore.Attachment}, whose URL prints redacted; it is never put in a header.
 */
public final class AttachmentWorkSource extends WorkSource {
    public static final String ATTACHMENT_ID = "ChatIntakeAttachmentId";

    public AttachmentWorkSource() {
        super(AttachmentStore.KIND);
    }

    @Override
    public void load(Connection connection, WorkItem item, Message message) throws SQLException {
        message.setHeader(ATTACHMENT_ID, item.sourceId());
        message.setBody(AttachmentStore.load(connection, item.sourceId()));
    }
}
