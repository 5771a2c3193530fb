package io.chatintake.support;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The net under every other precaution: each configured secret value (bot tokens, signing
 * secrets, the database password, verify tokens) is registered once at start, and every log line
 * ({@link RedactingLayout}) and every stored error text passes {@link #redact}, so a secret quoted
 * by anyone's exception message (a third-party component's, in a user's own route) is replaced.
 * Values shorter than {@value #MIN_LENGTH} characters are not registered: masking them would
 * garble every line and protects nothing.
 */
public final class Redactor {
    public static final String MASK = "[redacted]";
    public static final int MIN_LENGTH = 4;

    /** Short-lived secrets kept at once, newest first: enough for every item the work dispatcher runs at a time. */
    static final int TRANSIENT_CAPACITY = 256;

    // Longest first, so a secret that contains another is masked whole.
    private static volatile List<String> secrets = List.of();
    private static volatile List<Transient> transientSecrets = List.of();
    private static volatile List<String> transientForms = List.of();

    /** An event's secret and the forms it is masked in. */
    private record Transient(String value, List<String> forms) {
    }

    private Redactor() {
    }

    /** Adds these values (and their URL-encoded forms, as URIs quote them); returns how many were too short to add. */
    public static synchronized int register(Collection<String> values) {
        Set<String> all = new LinkedHashSet<>(secrets);
        int tooShort = 0;
        for (String value : values) {
            if (value == null || value.isBlank()) {
                continue;
            }
            if (value.length() < MIN_LENGTH) {
                tooShort++;
                continue;
            }
            all.addAll(forms(value));
        }
        secrets = longestFirst(all);
        return tooShort;
    }

    /** The value as written, and URL-encoded as URIs and form bodies quote it (Slack's response_url in a form). */
    private static List<String> forms(String value) {
        String encoded = URLEncoder.encode(value, StandardCharsets.UTF_8);
        return List.copyOf(new LinkedHashSet<>(List.of(value, encoded, encoded.replace("+", "%20"))));
    }

    private static List<String> longestFirst(Collection<String> values) {
        List<String> sorted = new ArrayList<>(values);
        sorted.sort(Comparator.comparingInt(String::length).reversed());
        return List.copyOf(sorted);
    }

    /**
     * A secret of one event rather than of the configuration (Discord's interaction token, LINE's
     * reply token), registered while its handler runs: only the most recent
     * {@value #TRANSIENT_CAPACITY} are kept, as each is registered again whenever it is used.
     */
    public static synchronized void registerTransient(String value) {
        if (value == null || value.length() < MIN_LENGTH || !transientSecrets.isEmpty() && transientSecrets.get(0).value().equals(value)) {
            return;
        }
        List<Transient> recent = new ArrayList<>(TRANSIENT_CAPACITY);
        recent.add(new Transient(value, forms(value)));
        transientSecrets.stream().filter(s -> !s.value().equals(value)).limit(TRANSIENT_CAPACITY - 1).forEach(recent::add);
        transientSecrets = List.copyOf(recent);
        transientForms = longestFirst(recent.stream().flatMap(t -> t.forms().stream()).collect(Collectors.toCollection(LinkedHashSet::new)));
    }

    /** For stored texts: redacted first, then cut to {@code maxLength}, so no secret is left half-masked. */
    public static String redact(String text, int maxLength) {
        String redacted = redact(text);
        return redacted == null || redacted.length() <= maxLength ? redacted : redacted.substring(0, maxLength);
    }

    public static String redact(String text) {
        if (text == null || text.isEmpty()) {
            return text;
        }
        return mask(mask(text, secrets), transientForms);
    }

    private static String mask(String text, List<String> values) {
        String result = text;
        for (String secret : values) {
            if (result.contains(secret)) {
                result = result.replace(secret, MASK);
            }
        }
        return result;
    }
}
