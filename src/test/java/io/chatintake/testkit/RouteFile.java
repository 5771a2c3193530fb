package io.chatintake.testkit;

import io.chatintake.channel.webhook.EventMapping;
import io.chatintake.channel.webhook.WebhookEvent;
import io.chatintake.channel.webhook.WebhookRouteFile;
import java.nio.file.Path;
import java.util.List;

/** Reads a shipped route file, so tests check the configuration users get, not a copy of it. */
public final class RouteFile {
    /** Read once, for every test that maps with it. */
    private static final EventMapping UNIFYPORT = WebhookRouteFile.eventMapping(Path.of("routes/unifyport-webhook.yaml"), "unifyport");

    private RouteFile() {
    }

    /** The events of one UnifyPort delivery body, mapped as the shipped routes/unifyport-webhook.yaml maps them. */
    public static List<WebhookEvent> unifyPortEvents(byte[] body, String deliveryId) {
        return UNIFYPORT.events(body, "application/json", header -> null, deliveryId);
    }
}
