package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.content.ContentExpiry;
import io.chatintake.testkit.Sql;
import io.chatintake.work.Retention;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.Test;

/** routes/retention.yaml: a pass removes old content, purges rows older than the books' window, and keeps recent ones. */
class RetentionRouteTest extends RouteTestSupport {

    @Override
    protected void bindBeans(Registry registry, Settings settings) {
        registry.bind("contentExpiry", ContentExpiry.from(settings, db));
        registry.bind("retention", Retention.from(settings, db));
    }

    @Test
    void aPassPurgesOnlyWhatIsOlderThanItsWindow() throws Exception {
        Sql.execute(db, "INSERT INTO outbound_effect (effect_key, state, started_at, done_at, result) VALUES"
                + " ('ancient', 'done', now() - interval '500 days', now() - interval '500 days', 'ancient reply'),"
                + " ('old', 'done', now() - interval '40 days', now() - interval '40 days', 'old reply'),"
                + " ('recent', 'done', now(), now(), 'recent reply')");
        loadRoutes("routes/retention.yaml");
        AdviceWith.adviceWith(context, "retention", r -> r.replaceFromWith("direct:pass"));
        context.start();

        template.sendBody("direct:pass", null);

        assertThat(Sql.string(db, "SELECT string_agg(effect_key || '=' || coalesce(result, '(content removed)'), ',' ORDER BY effect_key)"
                + " FROM outbound_effect")).isEqualTo("old=(content removed),recent=recent reply");
    }
}
