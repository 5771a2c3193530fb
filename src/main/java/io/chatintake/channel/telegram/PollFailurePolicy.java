package io.chatintake.channel.telegram;

import java.time.Duration;

/**
 * What a {@link BotPoller} does about one kind of failed step, as camel-kafka's consumer leaves
 * its failures to a {@code PollExceptionStrategy}: count it, say it on the health check, log it
 * (once, where it repeats), put the poller back where it can go on from, and say how long to wait.
 * None of them advances the offset: whatever was not stored is polled again.
 */
interface PollFailurePolicy {
    /** @return how long the poller waits before its next step */
    Duration handle(Exception failure, BotPoller poller);
}
