package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.album.AlbumDecisions;
import io.chatintake.config.Settings;
import io.chatintake.testkit.Sql;
import java.time.Duration;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.Test;

/**
 * routes/albums.yaml: an album is decided complete when its last child arrives, and provisional
 * when its deadline passes with children missing; each decision is recorded once, with its children.
 */
class AlbumsRouteTest extends RouteTestSupport {
    private static final String ALBUM_KEY = "SELECT album_key FROM album";

    @Override
    protected void bindBeans(Registry registry, Settings settings) {
        registry.bind("albumDecisions", new AlbumDecisions(db));
    }

    @Test
    void theChildThatCompletesAnAlbumDecidesIt() throws Exception {
        loadRoutes("routes/albums.yaml");
        AdviceWith.adviceWith(context, "album-deadlines", r -> r.replaceFromWith("direct:sweep"));
        context.start();

        storeChild("m1", 1, Duration.ofHours(1));
        template.sendBodyAndHeader("direct:album-child", null, "AlbumKey", Sql.string(db, ALBUM_KEY));
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).as("one child of two").isZero();
        storeChild("m2", 2, Duration.ofHours(1));
        template.sendBodyAndHeader("direct:album-child", null, "AlbumKey", Sql.string(db, ALBUM_KEY));

        assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision")).isEqualTo("complete 2");
    }

    @Test
    void anAlbumWhoseDeadlinePassedIsDecidedWithTheChildrenItHas() throws Exception {
        loadRoutes("routes/albums.yaml");
        AdviceWith.adviceWith(context, "album-deadlines", r -> r.replaceFromWith("direct:sweep"));
        context.start();

        storeChild("m1", 1, Duration.ZERO);
        template.sendBody("direct:sweep", null);

        assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision")).isEqualTo("provisional 1");
    }

    /** Child {@code index} of a two-picture album; the album's deadline {@code quiet} later. */
    private void storeChild(String messageId, int index, Duration quiet) throws Exception {
        String data = "{\"conversation\":{\"id\":\"conv\"},\"message\":{\"id\":\"" + messageId + "\",\"type\":\"image\","
                + "\"album\":{\"id\":\"a1\",\"index\":" + index + ",\"total\":2}}}";
        storeUnifyPortMessage("evt_" + messageId, data, quiet);
    }
}
