package io.chatintake.app;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.vertx.core.http.HttpServerOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * What a client the server knows nothing about can make it hold, before any signature is checked:
 * bytes per body (the server's ceiling; webhook routes have their own, smaller ones), seconds per
 * request and per quiet connection, and which protocols and body types it speaks at all.
 *
 * @param maxBodyBytes    the ceiling of any body ({@code chat-intake.http.max-body-bytes})
 * @param requestTimeout  how long a request may take to arrive in full; then 408 and the connection closed
 * @param idleTimeout     a connection that sends and receives nothing this long is closed
 * @param cleartextHttp2  HTTP/2 without TLS (h2c, prior knowledge or upgrade): off unless asked for
 * @param fileUploads     multipart bodies accepted (and uploads spooled to disk); otherwise 415 before reading
 */
record HttpLimits(long maxBodyBytes, Duration requestTimeout, Duration idleTimeout, boolean cleartextHttp2, boolean fileUploads) {
    static final String MAX_BODY_BYTES = "chat-intake.http.max-body-bytes";
    static final String REQUEST_TIMEOUT_SECONDS = "chat-intake.http.request-timeout-seconds";
    static final String IDLE_TIMEOUT_SECONDS = "chat-intake.http.idle-timeout-seconds";
    static final String CLEARTEXT_HTTP2 = "chat-intake.http.cleartext-http2";
    static final String FILE_UPLOADS = "chat-intake.http.file-uploads";

    static HttpLimits from(Settings settings) {
        return new HttpLimits(positive(settings, MAX_BODY_BYTES),
                Duration.ofSeconds(positive(settings, REQUEST_TIMEOUT_SECONDS)),
                Duration.ofSeconds(positive(settings, IDLE_TIMEOUT_SECONDS)),
                settings.getBoolean(CLEARTEXT_HTTP2), settings.getBoolean(FILE_UPLOADS));
    }

    /** camel.server.* has no key for these: they reach the server through the Vert.x it is created with. */
    HttpServerOptions apply(HttpServerOptions options) {
        return options.setHttp2ClearTextEnabled(cleartextHttp2)
                .setIdleTimeout((int) idleTimeout.toSeconds()).setIdleTimeoutUnit(TimeUnit.SECONDS);
    }

    private static long positive(Settings settings, String key) {
        long value = settings.getLong(key);
        if (value <= 0 || value > Integer.MAX_VALUE) {
            throw new ConfigurationException(Settings.envName(key) + " (" + key + ") must be a whole number from 1 to "
                    + Integer.MAX_VALUE + ", got " + value);
        }
        return value;
    }
}
