package io.chatintake.channel.webhook;

import io.chatintake.support.InformationalHealthCheck;
import java.util.Map;
import org.apache.camel.health.HealthCheckResultBuilder;

/**
 * A webhook intake's configuration on {@code /observe/health}: on, or off (no signing secret:
 * deliveries answered 503) and what to set. Always UP: a channel left unconfigured is a choice,
 * said here and once at start; it must not take the other channels out of service.
 */
public final class WebhookIntakeHealthCheck extends InformationalHealthCheck {
    private final String channel;
    private final String state;

    /** @param channel names the intake ({@code unifyport}, {@code unifyport-acme}); @param state e.g. "on" or "off: ..." */
    public WebhookIntakeHealthCheck(String channel, String state) {
        super("webhook-" + channel);
        this.channel = channel;
        this.state = state;
    }

    @Override
    protected void doCall(HealthCheckResultBuilder builder, Map<String, Object> options) {
        builder.message(channel + " webhook: " + state).detail("channel", channel).detail("state", state).up();
    }
}
