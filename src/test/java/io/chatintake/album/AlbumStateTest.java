package io.chatintake.album;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.album.AlbumState.Child;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The completion rules of seed 003, on their own. */
class AlbumStateTest {
    @Test
    void aConsistentTotalReachedByThatManyDistinctChildrenIsComplete() {
        AlbumState state = AlbumState.of(List.of(new Child(3, 3, 3), new Child(1, 1, 3), new Child(2, 2, 3)));

        assertThat(state.complete()).isTrue();
        assertThat(state.conflicting()).isFalse();
    }

    @Test
    void aRedeliveredChildDoesNotCountTwice() {
        AlbumState state = AlbumState.of(List.of(new Child(1, 1, 3), new Child(1, 1, 3), new Child(2, 2, 3)));

        assertThat(state.size()).isEqualTo(2);
        assertThat(state.complete()).isFalse();
    }

    @Test
    void withoutATotalNothingIsClaimed() {
        AlbumState state = AlbumState.of(List.of(new Child(1, null, null), new Child(2, null, null)));

        assertThat(state.complete()).isFalse();
        assertThat(state.conflicting()).isFalse();
        assertThat(state.totalsSeen()).isEmpty();
    }

    @Test
    void differentTotalsOrAnIndexClaimedTwiceAreConflictsThatKeepEveryChild() {
        AlbumState totals = AlbumState.of(List.of(new Child(1, 1, 2), new Child(2, 2, 3), new Child(3, 3, 3)));
        AlbumState clash = AlbumState.of(List.of(new Child(1, 1, 2), new Child(2, 1, 2)));

        assertThat(totals.conflicting()).isTrue();
        assertThat(totals.complete()).as("3 children and a total of 3 claimed, but 2 was claimed too").isFalse();
        assertThat(totals.totalsSeen()).containsExactly(2, 3);
        assertThat(clash.conflicting()).isTrue();
        assertThat(clash.complete()).isFalse();
        assertThat(clash.size()).isEqualTo(2);
    }
}
