package io.chatintake.work;

import io.chatintake.support.FormerHeaderNames;
import java.util.Map;
import org.apache.camel.Message;

/**
 * The headers of a guarded effect (a {@code guardedEffect} policy, or the {@code effectGuard} bean
 * steps): every one starts with {@code ChatIntakeEffect}. A route may set the former names
 * ({@link #FORMER_NAMES}); they are read when the current one is absent.
 */
public final class EffectConstants {
    /** Set by a route using the bean steps: the effect's name (a policy's id names it otherwise). */
    public static final String NAME = "ChatIntakeEffectName";
    /** Set by a route: the remote side deduplicates, so an effect begun but never recorded may run again. */
    public static final String IDEMPOTENT_DOWNSTREAM = "ChatIntakeEffectIdempotentDownstream";
    /** Set by the guard: the effect's key, the item's idempotency key and the effect's name. */
    public static final String KEY = "ChatIntakeEffectKey";
    /** Set by a step inside the effect: performed, failed, undeliverable or ambiguous. */
    public static final String OUTCOME = "ChatIntakeEffectOutcome";
    /** With a failed outcome: seconds before the next attempt may run. */
    public static final String RETRY_AFTER_SECONDS = "ChatIntakeEffectRetryAfterSeconds";

    /** Each header's name before the one-prefix rename, still read and set beside it. */
    public static final Map<String, String> FORMER_NAMES = Map.of(
            NAME, "EffectName",
            IDEMPOTENT_DOWNSTREAM, "EffectIdempotentDownstream",
            KEY, "EffectKey",
            OUTCOME, "EffectOutcome",
            RETRY_AFTER_SECONDS, "EffectRetryAfterSeconds");

    private EffectConstants() {
    }

    /** A header a route may set, under its current name or else its former one. */
    static <T> T read(Message message, String name, Class<T> type) {
        return FormerHeaderNames.read(message, name, FORMER_NAMES.get(name), type);
    }
}
