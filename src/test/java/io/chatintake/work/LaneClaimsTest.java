package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Picking due runs: which lanes a claim takes, and which of their items, against a real PostgreSQL. */
@ExtendWith(TestDatabase.class)
class LaneClaimsTest {
    private static final Duration CLAIM = Duration.ofSeconds(60);
    private static final String ORDERED = "ordered-work";
    private static final String UNORDERED = "unordered-work";
    private static final Set<String> KINDS = Set.of(ORDERED, UNORDERED);

    private final DataSource dataSource = TestDatabase.dataSource();
    private final LaneClaims lanes = new LaneClaims(dataSource, new FinishRuns(dataSource));

    private void schedule(String kind, String chat, int... ids) throws Exception {
        WorkerParts.schedule(dataSource, kind, chat, ids);
    }

    /** The lane has been due for this long: lanes due longer are claimed first. */
    private void dueSince(String chat, int seconds) {
        Sql.execute(dataSource, "UPDATE work_lane SET due_at = now() - make_interval(secs => " + seconds + ") WHERE chat_key = '" + chat + "'");
    }

    /** The item waits for a retry an hour away. */
    private void waitingForItsRetry(String kind, int id) {
        Sql.execute(dataSource, "UPDATE work_item SET next_attempt_at = now() + interval '1 hour' WHERE source_key = '" + kind + ":" + id + "'");
    }

    private Claimed claim(int runSize, int maxLanes) throws Exception {
        return lanes.claim("lane-test", CLAIM, runSize, maxLanes, Set.of(ORDERED), KINDS);
    }

    private static List<Long> sourceIds(WorkRun run) {
        return run.items().stream().map(WorkItem::sourceId).toList();
    }

    @Test
    void theLanesDueLongestAreTakenFirstEachWithItsOwnTokenAndTheOthersAreLeft() throws Exception {
        schedule(ORDERED, "newest", 1);
        schedule(ORDERED, "oldest", 2);
        schedule(ORDERED, "middle", 3);
        dueSince("newest", 10);
        dueSince("oldest", 30);
        dueSince("middle", 20);

        Claimed claimed = claim(100, 2);

        assertThat(claimed.runs()).extracting(WorkRun::chatKey).containsExactly("oldest", "middle");
        assertThat(claimed.runs()).extracting(WorkRun::token).doesNotHaveDuplicates();
        assertThat(claimed.lanesLooked()).isEqualTo(2);
        assertThat(claimed.longestDue()).as("how long the oldest lane had waited").isBetween(Duration.ofSeconds(30), Duration.ofSeconds(40));
        for (WorkRun run : claimed.runs()) {
            assertThat(run.items()).allMatch(item -> item.claimToken() == run.token()).allMatch(item -> item.attempts() == 1);
            assertThat(Sql.string(dataSource, "SELECT claimed_by || ' ' || claim_token || ' ' || (due_at > now() + interval '50 seconds')"
                    + " FROM work_lane WHERE chat_key = '" + run.chatKey() + "'")).isEqualTo("lane-test " + run.token() + " true");
            assertThat(Sql.string(dataSource, "SELECT state || ' ' || claim_token FROM work_item WHERE chat_key = '" + run.chatKey() + "'"))
                    .isEqualTo("running " + run.token());
        }
        assertThat(Sql.string(dataSource, "SELECT coalesce(claim_token::text, 'free') FROM work_lane WHERE chat_key = 'newest'")).isEqualTo("free");
        assertThat(Sql.string(dataSource, "SELECT state FROM work_item WHERE chat_key = 'newest'")).isEqualTo("pending");
    }

    @Test
    void theRunSizeIsSharedOutAmongTheLanesAndOneLaneAloneGetsItWhole() throws Exception {
        schedule(ORDERED, "a", 1, 2, 3, 4, 5);
        schedule(ORDERED, "b", 6, 7, 8, 9, 10);

        Claimed shared = claim(4, 32);
        assertThat(shared.runs()).hasSize(2);
        assertThat(shared.items()).isEqualTo(4);
        assertThat(shared.runs()).allMatch(run -> run.items().size() == 2);

        schedule(ORDERED, "c", 11, 12, 13, 14, 15);
        Claimed alone = claim(4, 32);
        assertThat(alone.runs()).singleElement().satisfies(run -> assertThat(sourceIds(run)).containsExactly(11L, 12L, 13L, 14L));
    }

    @Test
    void anOrderedLaneRunsOnlyItsDuePrefixFromTheHead() throws Exception {
        schedule(ORDERED, "a", 1, 2, 3, 4);
        waitingForItsRetry(ORDERED, 3);

        WorkRun run = claim(100, 32).runs().get(0);

        assertThat(sourceIds(run)).as("item 3's retry holds item 4").containsExactly(1L, 2L);
        assertThat(run.ordered()).isTrue();
        assertThat(run.headId()).isEqualTo(run.items().get(0).id());
        assertThat(Sql.string(dataSource, "SELECT string_agg(state, ',' ORDER BY id) FROM work_item")).isEqualTo("running,running,pending,pending");
    }

    @Test
    void anUnorderedLaneRunsEveryDueItemPastOneWaitingForItsRetry() throws Exception {
        schedule(UNORDERED, "a", 1, 2, 3);
        waitingForItsRetry(UNORDERED, 1);

        WorkRun run = claim(100, 32).runs().get(0);

        assertThat(sourceIds(run)).containsExactly(2L, 3L);
        assertThat(run.ordered()).isFalse();
        assertThat(Sql.string(dataSource, "SELECT string_agg(state, ',' ORDER BY id) FROM work_item")).isEqualTo("pending,running,running");
    }

    @Test
    void aLaneWithNothingDueIsSetAsideUntilItsHeadIsDueAndTheSameClaimLooksFurther() throws Exception {
        schedule(ORDERED, "waiting", 1, 2);
        schedule(ORDERED, "due", 3);
        dueSince("waiting", 30);
        dueSince("due", 10);
        waitingForItsRetry(ORDERED, 1);

        Claimed claimed = claim(100, 1);

        assertThat(claimed.runs()).singleElement().satisfies(run -> assertThat(run.chatKey()).isEqualTo("due"));
        assertThat(Sql.string(dataSource, "SELECT (l.due_at = i.next_attempt_at) || ' ' || (l.head_id = i.id) || ' ' || coalesce(l.claim_token::text, 'free')"
                + " FROM work_lane l JOIN work_item i ON i.source_key = 'ordered-work:1' WHERE l.chat_key = 'waiting'"))
                .as("due when its head's retry is, unclaimed").isEqualTo("true true free");
    }

    @Test
    void aLaneWithNothingUnfinishedGoesIdleAndNothingIsClaimed() throws Exception {
        schedule(ORDERED, "a", 1);
        Sql.execute(dataSource, "UPDATE work_item SET state = 'done'");

        Claimed claimed = claim(100, 32);

        assertThat(claimed.runs()).isEmpty();
        assertThat(Sql.string(dataSource, "SELECT coalesce(due_at::text, 'idle') FROM work_lane WHERE chat_key = 'a'")).isEqualTo("idle");
        assertThat(claim(100, 32).lanesLooked()).as("an idle lane is not looked at again").isZero();
    }

    @Test
    void onlyTheKindsRunHereAreClaimed() throws Exception {
        schedule("elsewhere", "a", 1);
        schedule(UNORDERED, "a", 2);

        Claimed claimed = claim(100, 32);

        assertThat(claimed.runs()).singleElement().satisfies(run -> assertThat(run.kind()).isEqualTo(UNORDERED));
        assertThat(Sql.string(dataSource, "SELECT state FROM work_item WHERE kind = 'elsewhere'")).isEqualTo("pending");
    }
}
