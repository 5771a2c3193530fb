package io.chatintake.support.trace;

import io.chatintake.support.Redactor;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.DelegatingSpanData;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The last gate before spans leave the process, whoever made them (Camel's tracer, ours):
 * URLs keep only their scheme and host (a Bot API path holds the bot token, a Discord follow-up
 * URL the interaction token, a Slack {@code response_url} is a credential), attributes that may
 * carry message text or credentials are dropped, events keep only their name and exception type,
 * and every configured secret value is masked wherever it still appears.
 */
final class SecretFreeSpanExporter implements SpanExporter {
    // Keys whose values may hold message text, headers or credentials: never exported.
    private static final Pattern DROPPED = Pattern.compile(
            "(?i).*(body|text|token|secret|signature|password|authorization|cookie|header|reply|response_url|query|message(?!ing)).*");
    private static final Pattern URL_VALUED = Pattern.compile("(?i).*(url|uri|target|path).*");
    private static final Pattern URL_IN_TEXT = Pattern.compile("(?i)\\b([a-z][a-z0-9+.-]*://[^/\\s?#]+)[^\\s]*");
    private static final AttributeKey<String> EXCEPTION_TYPE = AttributeKey.stringKey("exception.type");

    private final SpanExporter delegate;

    SecretFreeSpanExporter(SpanExporter delegate) {
        this.delegate = delegate;
    }

    @Override
    public CompletableResultCode export(Collection<SpanData> spans) {
        return delegate.export(spans.stream().map(SecretFreeSpanExporter::secretFree).toList());
    }

    static SpanData secretFree(SpanData span) {
        String name = clean(span.getName());
        Attributes attributes = clean(span.getAttributes());
        List<EventData> events = span.getEvents().stream().map(SecretFreeSpanExporter::clean).toList();
        return new DelegatingSpanData(span) {
            @Override
            public String getName() {
                return name;
            }

            @Override
            public Attributes getAttributes() {
                return attributes;
            }

            @Override
            public List<EventData> getEvents() {
                return events;
            }

            @Override
            public int getTotalRecordedEvents() {
                return events.size();
            }
        };
    }

    static Attributes clean(Attributes attributes) {
        AttributesBuilder kept = Attributes.builder();
        attributes.forEach((key, value) -> {
            String name = key.getKey();
            if (DROPPED.matcher(name).matches() && !name.startsWith("chat_intake.effect")) {
                return;
            }
            if (value instanceof String text) {
                if (!URL_VALUED.matcher(name).matches() || name.endsWith(".scheme")) {
                    kept.put(name, clean(text));
                } else if (origin(text) != null) {
                    kept.put(name, origin(text));
                }
            } else {
                @SuppressWarnings("unchecked")
                AttributeKey<Object> same = (AttributeKey<Object>) key;
                kept.put(same, value);
            }
        });
        return kept.build();
    }

    private static EventData clean(EventData event) {
        String type = event.getAttributes().get(EXCEPTION_TYPE);
        Attributes attributes = type == null ? Attributes.empty() : Attributes.of(EXCEPTION_TYPE, type);
        return EventData.create(event.getEpochNanos(), clean(event.getName()), attributes);
    }

    /** A span name or value: URLs cut to their origin, configured secrets masked. */
    static String clean(String text) {
        return Redactor.redact(URL_IN_TEXT.matcher(text).replaceAll("$1"));
    }

    /** A URL (or endpoint URI) as scheme://host[:port]; null for a bare path or anything else, which may hold a token. */
    static String origin(String value) {
        try {
            URI uri = URI.create(value.trim());
            if (uri.getScheme() != null && uri.getRawAuthority() != null) {
                return (uri.getScheme() + "://" + uri.getRawAuthority()).toLowerCase(Locale.ROOT).replaceAll(".*@", uri.getScheme() + "://");
            }
        } catch (IllegalArgumentException e) {
            // not a URI
        }
        return null;
    }

    @Override
    public CompletableResultCode flush() {
        return delegate.flush();
    }

    @Override
    public CompletableResultCode shutdown() {
        return delegate.shutdown();
    }
}
