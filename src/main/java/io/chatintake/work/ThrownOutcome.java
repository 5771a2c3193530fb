package io.chatintake.work;

import io.chatintake.support.Redactor;
import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.time.Instant;
import java.util.Map;
import javax.net.ssl.SSLHandshakeException;
import org.apache.camel.http.base.HttpOperationFailedException;
import org.apache.camel.spi.HttpResponseAware;

/**
 * What a guarded effect's steps threw says what became of the effect, when no step said so
 * itself: a failure before a byte was sent (refused, unknown host, no route, connect timeout,
 * TLS handshake) means not performed; an HTTP refusal (4xx other than 408 and 429) means
 * undeliverable; 408, 429 (with its Retry-After) and other statuses below 500 mean failed; anything
 * else (a read timeout or reset after sending, a 5xx, an error the policy cannot place) may have
 * happened, so it is ambiguous and a person decides.
 */
final class ThrownOutcome {
    private static final int MAX_TEXT = 300;

    private ThrownOutcome() {
    }

    /** The failure to record for effect {@code key}; its text names the cause without a URL (paths may carry tokens). */
    static EffectFailure of(String key, Throwable thrown) {
        if (thrown instanceof EffectFailure told) {
            return told;
        }
        HttpResponseAware http = find(thrown, HttpResponseAware.class);
        if (http != null && http.getHttpResponseCode() > 0) {
            return ofStatus(key, http);
        }
        Throwable root = root(thrown);
        String cause = Redactor.redact(root.getClass().getSimpleName() + (root.getMessage() == null ? "" : ": " + root.getMessage()), MAX_TEXT);
        EffectOutcome outcome = notSent(thrown) ? EffectOutcome.FAILED : EffectOutcome.AMBIGUOUS;
        return new EffectFailure(outcome, "effect " + key + " " + outcome.label() + " (" + cause + ")", null);
    }

    private static EffectFailure ofStatus(String key, HttpResponseAware http) {
        int status = http.getHttpResponseCode();
        String text = "effect " + key + ": HTTP status " + status;
        if (status == 429) {
            Long seconds = retryAfterSeconds(http);
            return new EffectFailure(EffectOutcome.FAILED, text + ", rate limited", seconds == null ? null : Instant.now().plusSeconds(seconds));
        }
        if (status >= 400 && status < 500 && status != 408) {
            return new EffectFailure(EffectOutcome.UNDELIVERABLE, text + ", refused for good", null);
        }
        return status >= 500 ? new EffectFailure(EffectOutcome.AMBIGUOUS, text + ", may have been performed", null)
                : new EffectFailure(EffectOutcome.FAILED, text + ", not performed", null);
    }

    private static boolean notSent(Throwable thrown) {
        for (Throwable t = thrown; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof ConnectException || t instanceof UnknownHostException || t instanceof NoRouteToHostException
                    || t instanceof SSLHandshakeException
                    // Apache HttpClient's, Netty's and the JDK client's: no connection, nothing sent.
                    || t instanceof IOException && t.getClass().getSimpleName().endsWith("ConnectTimeoutException")) {
                return true;
            }
        }
        return false;
    }

    /** Seconds of a Retry-After given as a number (a date, or none: plain backoff). */
    private static Long retryAfterSeconds(HttpResponseAware http) {
        if (!(http instanceof HttpOperationFailedException failed) || failed.getResponseHeaders() == null) {
            return null;
        }
        for (Map.Entry<String, String> header : failed.getResponseHeaders().entrySet()) {
            if ("Retry-After".equalsIgnoreCase(header.getKey()) && header.getValue() != null && header.getValue().trim().matches("\\d{1,9}")) {
                return Math.max(1, Long.parseLong(header.getValue().trim()));
            }
        }
        return null;
    }

    private static <T> T find(Throwable thrown, Class<T> type) {
        for (Throwable t = thrown; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        return null;
    }

    private static Throwable root(Throwable thrown) {
        Throwable t = thrown;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }
}
