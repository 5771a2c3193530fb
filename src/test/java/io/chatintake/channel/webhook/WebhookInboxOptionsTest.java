package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/** The store's bound is {@code statementTimeoutMillis}; its earlier name, {@code statementTimeoutMs}, still sets it. */
class WebhookInboxOptionsTest {
    @Test
    void statementTimeoutMillisAndItsEarlierNameSetTheStoresBound() throws Exception {
        try (CamelContext camel = new DefaultCamelContext()) {
            WebhookInboxEndpoint byNewName = camel.getEndpoint("webhook-inbox:acme?statementTimeoutMillis=1200", WebhookInboxEndpoint.class);
            WebhookInboxEndpoint byOldName = camel.getEndpoint("webhook-inbox:beta?statementTimeoutMs=1300", WebhookInboxEndpoint.class);
            WebhookInboxEndpoint byDefault = camel.getEndpoint("webhook-inbox:gamma", WebhookInboxEndpoint.class);

            assertThat(byNewName.getStatementTimeoutMillis()).isEqualTo(1200);
            assertThat(byOldName.getStatementTimeoutMillis()).isEqualTo(1300);
            assertThat(byDefault.getStatementTimeoutMillis()).isEqualTo(5000);
        }
    }
}
