package io.chatintake.ops;

import io.chatintake.config.Settings;
import io.chatintake.support.Redactor;
import java.util.regex.Pattern;

/**
 * What the status page shows of a stored error or result text. Those texts are redacted when
 * written; this is the net under that: this process's secret values, and the query of any URL
 * (temporary media URLs carry their signature there), then at most {@value #MAX_LENGTH}
 * characters.
 */
final class StatusRedactor {
    static final int MAX_LENGTH = 200;
    private static final Pattern URL_QUERY = Pattern.compile("(https?://[^\\s?#\"']+)\\?[^\\s\"']*");

    private final Settings settings;

    StatusRedactor(Settings settings) {
        this.settings = settings;
    }

    /** @return the text to show, "" for none */
    String redact(String text) {
        if (text == null) {
            return "";
        }
        String result = Redactor.redact(text);
        for (String secret : settings.secretValues()) {
            if (secret.length() >= Redactor.MIN_LENGTH) {
                result = result.replace(secret, Redactor.MASK);
            }
        }
        result = URL_QUERY.matcher(result).replaceAll("$1?" + Redactor.MASK);
        return result.length() <= MAX_LENGTH ? result : result.substring(0, MAX_LENGTH) + "...";
    }
}
