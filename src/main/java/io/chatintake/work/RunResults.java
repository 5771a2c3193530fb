package io.chatintake.work;

import io.chatintake.support.Redactor;
import java.time.Instant;
import java.util.function.Function;
import org.apache.camel.Exchange;
import org.apache.camel.support.MessageHelper;
import org.apache.camel.support.processor.DefaultExchangeFormatter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What became of one run of an item's handler, and how it is told. Expected outcomes are one
 * line: a retry (INFO, with the next attempt), an undeliverable effect (INFO), a retry-after
 * (INFO); a deferral for a limit is not logged at all, only counted. Camel's message history
 * and the stack trace go to DEBUG, and once to WARN with the line of an item that is parked.
 */
final class RunResults {
    private static final Logger LOG = LoggerFactory.getLogger(RunResults.class);
    private static final int MAX_ERROR = 1000;

    private final Function<String, KindRules> rules;
    private final EffectGuard effects;
    private final WorkMetrics metrics;

    RunResults(Function<String, KindRules> rules, EffectGuard effects, WorkMetrics metrics) {
        this.rules = rules;
        this.effects = effects;
        this.metrics = metrics;
    }

    RunResult of(WorkItem item, Exchange exchange) {
        Exception error = exchange.getException();
        if (error == null) {
            return RunResult.done(item);
        }
        KindRules kind = rules.apply(item.kind());
        int maxAttempts = kind.maxAttempts();
        // A guarded effect's failure says what happened; the ledger records it first.
        EffectFailure effect = exchange.getException(EffectFailure.class);
        if (effect != null) {
            effects.settle(exchange, effect);
        }
        String cause = describe(error);
        if (effect != null && effect.deferral() != null) {
            metrics.deferred(item, effect.deferral());
            if (effect.deferral() == DeferReason.RETRY_AFTER) {
                LOG.info("work: {} told to retry after {} (not counted as an attempt): {}", where(item, maxAttempts), effect.notBefore(), cause);
            }
            return RunResult.deferred(item, effect.notBefore());
        }
        EffectOutcome effectOutcome = effect == null ? null : effect.outcome();
        if (effectOutcome == EffectOutcome.UNDELIVERABLE) {
            LOG.info("work: {} undeliverable, ends done and is not retried: {}", where(item, maxAttempts), cause);
            return RunResult.undeliverable(item, cause);
        }
        if (effectOutcome == EffectOutcome.AMBIGUOUS || exchange.getException(EffectGuard.UnconfirmedEffectException.class) != null) {
            LOG.warn("work: {} parked for reconciliation, not run again until a person decides: {}\n{}", where(item, maxAttempts), cause, history(exchange));
            return RunResult.parked(item, cause);
        }
        if (item.attempts() >= maxAttempts) {
            LOG.warn("work: {} parked after its last attempt, not run again until work retry: {}\n{}", where(item, maxAttempts), cause, history(exchange));
            return RunResult.parked(item, cause);
        }
        Instant next = Instant.now().plus(kind.backoff().delayAfter(item.attempts()));
        LOG.info("work: {} failed, next attempt at {}: {}", where(item, maxAttempts), next, cause);
        if (LOG.isDebugEnabled()) {
            LOG.debug("work: item {} failed:\n{}", item.id(), history(exchange));
        }
        return RunResult.failed(item, cause, next);
    }

    private static String where(WorkItem item, int maxAttempts) {
        return "item " + item.id() + " (" + item.kind() + " " + item.sourceKey() + (item.chatKey() == null ? "" : ", chat " + item.chatKey())
                + ", attempt " + item.attempts() + " of " + maxAttempts + ")";
    }

    /** The exchange's message history and stack trace, without body or headers (they may hold secrets), redacted. */
    private static String history(Exchange exchange) {
        DefaultExchangeFormatter formatter = new DefaultExchangeFormatter();
        formatter.setShowBody(false);
        formatter.setShowBodyType(false);
        formatter.setShowHeaders(false);
        formatter.setShowExchangePattern(false);
        return Redactor.redact(MessageHelper.dumpMessageHistoryStacktrace(exchange, formatter, true));
    }

    /** The failure's message, as stored in last_error and shown by work status: redacted, for any component's message may quote a secret. */
    static String describe(Throwable error) {
        Throwable cause = error;
        while (cause.getCause() != null && cause.getCause() != cause && cause.getMessage() == null) {
            cause = cause.getCause();
        }
        String text = cause.getClass().getSimpleName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
        return Redactor.redact(text, MAX_ERROR);
    }
}
