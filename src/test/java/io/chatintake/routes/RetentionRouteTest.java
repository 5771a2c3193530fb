package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.testkit.Sql;
import io.chatintake.work.Retention;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.Test;

/** routes/retention.yaml: a pass purges finished rows older than their window and keeps the recent ones. */
class RetentionRouteTest extends RouteTestSupport {

    @Override
    protected void bindBeans(Registry registry, Settings settings) {
        registry.bind("retention", Retention.from(settings, db));
    }

    @Test
    void aPassPurgesOnlyWhatIsOlderThanItsWindow() throws Exception {
        Sql.execute(db, "INSERT INTO outbound_effect (effect_key, state, started_at, done_at) VALUES"
                + " ('old', 'done', now() - interval '40 days', now() - interval '40 days'), ('recent', 'done', now(), now())");
        loadRoutes("routes/retention.yaml");
        AdviceWith.adviceWith(context, "retention", r -> r.replaceFromWith("direct:pass"));
        context.start();

        template.sendBody("direct:pass", null);

        assertThat(Sql.string(db, "SELECT string_agg(effect_key, ',') FROM outbound_effect")).isEqualTo("recent");
    }
}
