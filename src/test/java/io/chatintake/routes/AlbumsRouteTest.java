package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.album.AlbumAggregateController;
import io.chatintake.album.AlbumAggregation;
import io.chatintake.album.AlbumAggregationRepository;
import io.chatintake.album.AlbumDeadlineSweep;
import io.chatintake.album.AlbumDecisions;
import io.chatintake.config.Settings;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * routes/albums.yaml: the Aggregator completes an album when its children agree on a total and
 * that many distinct ones are in (a child aggregated twice counts once), and after the quiet period
 * otherwise (the sweep route); each decision is recorded once, with its children.
 */
class AlbumsRouteTest extends RouteTestSupport {
    @Override
    protected Map<String, String> settings() {
        return Map.of("albums.quiet-period-seconds", "1");
    }

    @Override
    protected void bindBeans(Registry registry, Settings settings) {
        AlbumDecisions decisions = new AlbumDecisions(db);
        AlbumAggregateController controller = new AlbumAggregateController();
        registry.bind("albumDecisions", decisions);
        registry.bind("albumAggregation", new AlbumAggregation());
        registry.bind("albumRecorders", AlbumDecisions.recorders());
        registry.bind("albumAggregateController", controller);
        AlbumAggregationRepository repository = new AlbumAggregationRepository(db, controller);
        registry.bind("albumAggregationRepository", repository);
        registry.bind("albumDeadlineSweep", new AlbumDeadlineSweep(repository, controller));
    }

    @Test
    void theDistinctChildThatCompletesAnAlbumDecidesIt() throws Exception {
        loadRoutes("routes/albums.yaml");
        AdviceWith.adviceWith(context, "album-deadlines", r -> r.replaceFromWith("direct:sweep"));
        handItemsTo("album-child");
        context.start();

        sendChild(storeChild("m1", 1, Duration.ofHours(1)), 1);
        sendChild(Sql.count(db, "SELECT id FROM channel_message WHERE message_id = 'm1'"), 1);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).as("one child of two, aggregated twice").isZero();
        sendChild(storeChild("m2", 2, Duration.ofHours(1)), 2);

        Await.until("the album decided", Duration.ofSeconds(10), () -> Sql.count(db, "SELECT count(*) FROM album_decision") > 0);
        assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision")).isEqualTo("complete 2");
    }

    @Test
    void anAlbumWhoseQuietPeriodPassedIsDecidedWithTheChildrenItHas() throws Exception {
        loadRoutes("routes/albums.yaml");
        AdviceWith.adviceWith(context, "album-deadlines", r -> r.replaceFromWith("direct:sweep"));
        handItemsTo("album-child");
        context.start();

        sendChild(storeChild("m1", 1, Duration.ofSeconds(1)), 1);

        Await.until("the overdue album decided", Duration.ofSeconds(15), () -> {
            template.sendBody("direct:sweep", null);
            return Sql.count(db, "SELECT count(*) FROM album_decision") > 0;
        });
        assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision")).isEqualTo("provisional 1");
    }

    @Test
    void anAggregatorThatWouldRetryALostRaceOnAnotherThreadIsRefusedAtStartWithWhatToWrite(@TempDir Path dir) throws Exception {
        Path edited = dir.resolve("albums.yaml");
        Files.writeString(edited, Files.readString(Path.of("routes/albums.yaml")).replace("retryDelay: 0", "retryDelay: 50"));
        loadRoutes(edited.toString());

        assertThatThrownBy(() -> context.start()).hasStackTraceContaining("retryDelay: 0 and exponentialBackOff: false");
    }

    /** Child {@code index} of a two-picture album, stored as a channel would; its channel_message id. */
    private long storeChild(String messageId, int index, Duration quiet) throws Exception {
        String data = "{\"conversation\":{\"id\":\"conv\"},\"message\":{\"id\":\"" + messageId + "\",\"type\":\"image\","
                + "\"album\":{\"id\":\"a1\",\"index\":" + index + ",\"total\":2}}}";
        storeUnifyPortMessage("evt_" + messageId, data, quiet);
        return Sql.count(db, "SELECT id FROM channel_message WHERE message_id = '" + messageId + "'");
    }

    /** The child as the work dispatcher hands it to the album-child route. */
    private void sendChild(long childId, int index) {
        template.sendBodyAndHeaders("direct:album-child", null, Map.of("ChatIntakeAlbumKey", Sql.string(db, "SELECT album_key FROM album"),
                "ChatIntakeAlbumChildId", childId, "ChatIntakeAlbumIndex", index, "ChatIntakeAlbumTotal", 2, "ChatIntakeAlbumProvider", "whatsapp"));
    }
}
