package io.chatintake.work;

import io.chatintake.support.CrashPoint;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.apache.camel.NamedNode;
import org.apache.camel.Processor;
import org.apache.camel.Route;
import org.apache.camel.model.OptionalIdentifiedDefinition;
import org.apache.camel.model.ProcessorDefinition;
import org.apache.camel.spi.Policy;
import org.apache.camel.support.processor.DelegateAsyncProcessor;

/**
 * A guarded effect as one step of a route, Camel's Policy EIP over the {@link EffectGuard}:
 * <pre>
 * - policy:
 *     id: crm-update              # names the effect: its key is ChatIntakeWorkIdempotencyKey:crm-update
 *     ref: guardedEffect
 *     steps:
 *       - to: "https://crm.example/api/contacts"
 * </pre>
 * It begins the effect before its steps and records it after them. An effect settled before
 * (done or undeliverable) is not performed again: the steps are skipped, the body becomes the
 * recorded result and the route goes on. What happened comes from the {@value EffectOutcome#HEADER}
 * header where a step set it, otherwise from what the steps threw ({@link ThrownOutcome}); a
 * failure is recorded and thrown as an {@link EffectFailure} for the work dispatcher (retry,
 * retry-after, end undeliverable, park).
 */
public final class GuardedEffect implements Policy {
    /** The bean name routes refer to ({@code ref: guardedEffect}). */
    public static final String BEAN = "guardedEffect";

    private final EffectGuard guard;
    // Camel calls beforeWrap, builds the steps (maybe with a policy of their own), then calls wrap.
    private final ThreadLocal<Deque<String>> names = ThreadLocal.withInitial(ArrayDeque::new);

    public GuardedEffect(EffectGuard guard) {
        this.guard = guard;
    }

    @Override
    public void beforeWrap(Route route, NamedNode definition) {
        if (!(definition instanceof OptionalIdentifiedDefinition<?> step) || !step.hasCustomIdAssigned()) {
            String where = definition.getLocation() == null ? "" : " (" + definition.getLocation() + ":" + definition.getLineNumber() + ")";
            throw new IllegalArgumentException("a guardedEffect policy in route " + route.getRouteId() + where
                    + " needs an id naming its effect, e.g. policy: {id: crm-update, ref: guardedEffect, steps: [...]}");
        }
        names.get().push(definition.getId());
        // An error handler redelivering a step inside would repeat the call before anything is
        // recorded: the steps fail straight to the policy, and a redelivery of the whole policy
        // (or the item's next attempt) asks the ledger first.
        withoutErrorHandler((ProcessorDefinition<?>) definition);
    }

    /** Camel wraps a step in the error handler by its parent's flag: the policy's and every nested one's. */
    private static void withoutErrorHandler(ProcessorDefinition<?> parent) {
        parent.setInheritErrorHandler(false);
        parent.getOutputs().forEach(GuardedEffect::withoutErrorHandler);
    }

    @Override
    public Processor wrap(Route route, Processor processor) {
        return new Guarded(names.get().pop(), processor);
    }

    private final class Guarded extends DelegateAsyncProcessor {
        private final String name;

        Guarded(String name, Processor steps) {
            super(steps);
            this.name = name;
        }

        @Override
        public boolean process(Exchange exchange, AsyncCallback callback) {
            TraceContext.Call span = TraceContext.call("effect " + name, "chat_intake.effect.name", name);
            Optional<EffectGuard.Settlement> earlier;
            try {
                earlier = guard.open(exchange, name);
            } catch (Exception e) {
                span.end("not opened", null);
                exchange.setException(e);
                callback.done(true);
                return true;
            }
            if (earlier.isPresent()) {
                if ("done".equals(earlier.get().state())) {
                    exchange.getMessage().setBody(earlier.get().result());
                }
                span.end("already " + earlier.get().state(), null);
                callback.done(true);
                return true;
            }
            return processor.process(exchange, doneSync -> {
                EffectFailure failure = record(exchange);
                span.end(failure == null ? "done" : failure.outcome().name().toLowerCase(Locale.ROOT),
                        exchange.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE, Integer.class));
                callback.done(doneSync);
            });
        }

        /** @return the failure recorded, null when the effect was performed */
        private EffectFailure record(Exchange exchange) {
            CrashPoint.reach(EffectGuard.CRASH_AFTER_ACTION);
            String key = exchange.getMessage().getHeader(EffectGuard.EFFECT_KEY, String.class);
            String declared = EffectConstants.read(exchange.getMessage(), EffectOutcome.HEADER, String.class);
            EffectFailure failure;
            if (declared != null && !declared.isBlank()) {
                failure = declared(exchange, key, declared);
            } else {
                failure = exchange.getException() == null ? null : ThrownOutcome.of(key, exchange.getException());
            }
            // Told once: a later effect of the same route starts without this one's outcome.
            for (String header : List.of(EffectOutcome.HEADER, EffectOutcome.RETRY_AFTER_HEADER)) {
                exchange.getMessage().removeHeader(header);
                exchange.getMessage().removeHeader(EffectConstants.FORMER_NAMES.get(header));
            }
            if (failure == null) {
                exchange.setException(null);
                guard.performed(exchange);
            } else {
                guard.settle(exchange, failure);
                exchange.setException(failure);
            }
            return failure;
        }

        /** What a step said; a word the policy does not know leaves the effect for a person, as the steps did run. */
        private static EffectFailure declared(Exchange exchange, String key, String declared) {
            EffectOutcome outcome;
            try {
                outcome = EffectOutcome.parse(declared);
            } catch (IllegalArgumentException e) {
                return new EffectFailure(EffectOutcome.AMBIGUOUS, "effect " + key + ": " + e.getMessage(), null);
            }
            return outcome == EffectOutcome.PERFORMED ? null : EffectGuard.declaredFailure(exchange.getMessage(), key, outcome);
        }

        @Override
        public String toString() {
            return "guardedEffect[" + name + "]";
        }
    }
}
