package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import java.util.List;
import org.junit.jupiter.api.Test;

class BotApiClientTest {
    @Test
    void eachUpdateKeepsItsTextAsSentWithItsIdAndTheTypeNamedByItsFirstOtherField() throws Exception {
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(77, "FAKE-client-test-token", "client_test_bot");
            String nested = "{\"message\": {\"chat\": {\"id\": 5}, \"entities\": [{\"a\": [1, {\"b\": \"}\"}]}], \"text\": \"x\\u00e9\"},"
                    + " \"update_id\": %d}";
            long first = simulator.enqueueJson(token, id -> nested.formatted(id));
            long second = simulator.enqueueJson(token, id -> "{\"update_id\":%d}".formatted(id));
            long third = simulator.enqueueJson(token, id -> "{\"update_id\":%d,\"brand_new_kind\":[{\"k\":{}}],\"poll\":{}}".formatted(id));

            List<BotApiClient.RawUpdate> updates = new BotApiClient(simulator.url(), Secret.of(token)).getUpdates(0, 100, 0, null);

            assertThat(updates).containsExactly(
                    new BotApiClient.RawUpdate(first, "message", nested.formatted(first)),
                    new BotApiClient.RawUpdate(second, "unknown", "{\"update_id\":%d}".formatted(second)),
                    new BotApiClient.RawUpdate(third, "brand_new_kind",
                            "{\"update_id\":%d,\"brand_new_kind\":[{\"k\":{}}],\"poll\":{}}".formatted(third)));
        }
    }

    @Test
    void anUpdateGivenAsTextIsTypedTheSameWay() throws Exception {
        assertThat(BotApiClient.typeOf("{\"update_id\": 1, \"message\": {\"text\": \"}\"}}")).isEqualTo("message");
        assertThat(BotApiClient.typeOf("{\"message_reaction\": {}, \"update_id\": 1}")).isEqualTo("message_reaction");
        assertThat(BotApiClient.typeOf("{\"update_id\": 1}")).isEqualTo("unknown");
        assertThat(BotApiClient.typeOf("[1]")).isEqualTo("unknown");
    }
}
