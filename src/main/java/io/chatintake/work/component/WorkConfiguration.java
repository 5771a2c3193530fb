package io.chatintake.work.component;

import io.chatintake.work.KindRules;
import java.time.Duration;
import org.apache.camel.RuntimeCamelException;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/**
 * What belongs to a kind of work: whether one conversation's items run one at a time in arrival
 * order, how many attempts an item gets before it is parked, and the backoff between attempts.
 * Unset, they follow the dispatcher's configuration ({@code work.ordered-kinds},
 * {@code work.max-attempts}, {@code work.backoff-*}).
 */
@UriParams
public class WorkConfiguration implements Cloneable {
    @UriParam(label = "consumer", description = "Whether one conversation's items run one at a time, in arrival order;"
            + " unset: whether work.ordered-kinds lists the kind")
    private Boolean ordered;
    @UriParam(label = "consumer", description = "Attempts before an item is parked for a person; unset: work.max-attempts")
    private Integer maxAttempts;
    @UriParam(label = "consumer", description = "First backoff between attempts (exponential, with jitter), milliseconds;"
            + " unset: work.backoff-base-millis")
    private Long backoffBaseMillis;
    @UriParam(label = "consumer", description = "Longest backoff between attempts, milliseconds; unset: work.backoff-cap-millis")
    private Long backoffCapMillis;

    public Boolean getOrdered() {
        return ordered;
    }

    public void setOrdered(Boolean ordered) {
        this.ordered = ordered;
    }

    public Integer getMaxAttempts() {
        return maxAttempts;
    }

    public void setMaxAttempts(Integer maxAttempts) {
        this.maxAttempts = maxAttempts;
    }

    public Long getBackoffBaseMillis() {
        return backoffBaseMillis;
    }

    public void setBackoffBaseMillis(Long backoffBaseMillis) {
        this.backoffBaseMillis = backoffBaseMillis;
    }

    public Long getBackoffCapMillis() {
        return backoffCapMillis;
    }

    public void setBackoffCapMillis(Long backoffCapMillis) {
        this.backoffCapMillis = backoffCapMillis;
    }

    /** The kind's rules: these options where set, the dispatcher's configuration elsewhere. */
    public KindRules rules(KindRules defaults) {
        return new KindRules(ordered != null ? ordered : defaults.ordered(), maxAttempts != null ? maxAttempts : defaults.maxAttempts(),
                backoffBaseMillis != null ? Duration.ofMillis(backoffBaseMillis) : defaults.backoffBase(),
                backoffCapMillis != null ? Duration.ofMillis(backoffCapMillis) : defaults.backoffCap());
    }

    WorkConfiguration copy() {
        try {
            return (WorkConfiguration) clone();
        } catch (CloneNotSupportedException e) {
            throw new RuntimeCamelException(e);
        }
    }
}
