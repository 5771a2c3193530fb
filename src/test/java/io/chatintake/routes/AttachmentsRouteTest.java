package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.album.QuietPeriods;
import io.chatintake.attachment.AttachmentFetcher;
import io.chatintake.attachment.AttachmentStore;
import io.chatintake.channel.telegram.TelegramBots;
import io.chatintake.channel.telegram.TelegramFileSource;
import io.chatintake.config.Settings;
import io.chatintake.sim.MediaHost;
import io.chatintake.testkit.Content;
import io.chatintake.testkit.Sql;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** routes/attachments.yaml: an attachment's file is downloaded from its URL (a media host on loopback) into the media store. */
class AttachmentsRouteTest extends RouteTestSupport {
    // Static: the configuration below is read while the test instance is being constructed.
    private static final MediaHost media = MediaHost.start();
    private static final Path dataDir = temporaryDirectory();

    @Override
    protected Map<String, String> settings() {
        Map<String, String> settings = new HashMap<>(MediaHost.ALLOWED);
        settings.put("chat-intake.data-dir", dataDir.toString());
        return settings;
    }

    @Override
    protected void bindBeans(Registry registry, Settings settings) {
        registry.bind("attachmentFetcher", new AttachmentFetcher(db, AttachmentFetcher.Options.from(settings, 5),
                new TelegramFileSource(TelegramBots.apiUrl(null, settings::get), bot -> TelegramBots.token(bot, null, null, settings::get))));
    }

    @AfterAll
    static void stopMedia() {
        media.close();
    }

    @Test
    void downloadsTheAttachmentIntoTheMediaStore() throws Exception {
        byte[] content = Content.random(2048);
        String url = media.publish(content, "image/jpeg", Duration.ofMinutes(5));
        long id = storeMessageWithAttachment(url);
        loadRoutes("routes/attachments.yaml");
        handItemsTo("attachment");
        context.start();

        try (Connection c = db.getConnection()) {
            template.sendBody("direct:attachment", AttachmentStore.load(c, id));
        }

        assertThat(Sql.string(db, "SELECT status || ' ' || size_bytes FROM message_attachment")).isEqualTo("stored 2048");
        assertThat(dataDir.resolve("media").resolve(Sql.string(db, "SELECT media_path FROM message_attachment"))).hasBinaryContent(content);
    }

    /** A stored message with one attachment; the attachment's id. */
    private long storeMessageWithAttachment(String url) throws Exception {
        String data = "{\"conversation\":{\"id\":\"conv\"},\"message\":{\"id\":\"m1\",\"type\":\"image\",\"attachments\":[{\"url\":\"" + url + "\"}]}}";
        storeUnifyPortMessage("evt_1", data, QuietPeriods.DEFAULTS.other());
        return Sql.count(db, "SELECT id FROM message_attachment");
    }

    private static Path temporaryDirectory() {
        try {
            return Files.createTempDirectory("chat-intake-route-test");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
