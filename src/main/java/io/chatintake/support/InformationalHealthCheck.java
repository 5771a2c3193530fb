package io.chatintake.support;

import org.apache.camel.CamelContext;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.health.HealthCheckRegistry;
import org.apache.camel.impl.health.AbstractHealthCheck;

/**
 * A health check shown on {@code /observe/health} only, never part of readiness or liveness. It
 * tells a person how one bot or channel is doing; but a bot whose token is refused, or a channel
 * left unconfigured, must neither take the process out of the load balancer (its webhooks and
 * other bots still work) nor get it restarted (a restart fixes neither). Readiness is about the
 * database alone: without it nothing can be acknowledged.
 */
public abstract class InformationalHealthCheck extends AbstractHealthCheck {
    protected InformationalHealthCheck(String id) {
        super("chat-intake", id);
    }

    @Override
    public final boolean isReadiness() {
        return false;
    }

    @Override
    public final boolean isLiveness() {
        return false;
    }

    /** Shown from now on (nothing happens where Camel runs without health checks). */
    public void register(CamelContext context) {
        HealthCheckRegistry registry = HealthCheckHelper.getHealthCheckRegistry(context);
        if (registry != null) {
            registry.register(this);
        }
    }

    public void unregister(CamelContext context) {
        HealthCheckRegistry registry = HealthCheckHelper.getHealthCheckRegistry(context);
        if (registry != null) {
            registry.unregister(this);
        }
    }
}
