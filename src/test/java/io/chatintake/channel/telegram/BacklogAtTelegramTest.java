package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class BacklogAtTelegramTest {
    @Test
    void oneOrTwoFullBatchesAreSteadyTrafficAndThreeInARowABacklogUntilOneIsNotFull() {
        BacklogAtTelegram backlog = new BacklogAtTelegram();
        assertThat(backlog.afterPoll(true)).isFalse();
        assertThat(backlog.afterPoll(true)).isFalse();
        assertThat(backlog.afterPoll(false)).isFalse();
        assertThat(backlog.afterPoll(true)).as("the count starts again after a batch that was not full").isFalse();
        assertThat(backlog.afterPoll(true)).isFalse();
        assertThat(backlog.afterPoll(true)).isTrue();
        assertThat(backlog.afterPoll(true)).isTrue();
        assertThat(backlog.afterPoll(false)).isFalse();
        assertThat(backlog.afterPoll(true)).isFalse();
    }
}
