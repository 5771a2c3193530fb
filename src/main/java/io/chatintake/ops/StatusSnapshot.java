package io.chatintake.ops;

import io.chatintake.store.OldestTransaction;
import io.chatintake.store.OperatorPause;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the status page shows, as the database held it when {@link StatusQueries} read it: plain
 * values, no markup, drawn by {@link StatusView}. Every list is bounded ({@link #PAGE} rows); the
 * long ones are {@link ListPage}s that know their total.
 *
 * @param now               the database's clock when read: every age on the page is measured from it
 * @param parked            the page of parked items asked for; empty when nothing is parked
 * @param oldestTransaction a transaction open longer than {@code chat-intake.db.open-transaction-warn-seconds}
 */
record StatusSnapshot(Instant now, List<ErasureDone> erasures, List<WorkCount> work, ListPage<ParkedItem> parked,
                      Map<String, OperatorPause.Paused> pausedKinds, ListPage<EffectToSettle> effects, List<RecentAction> actions,
                      Albums albums, AttachmentCounts attachments, List<Bot> bots, Map<String, OperatorPause.Paused> pausedBots,
                      List<WebhookChannel> webhookChannels, List<Process> processes, Optional<OldestTransaction> oldestTransaction) {

    /** The most rows of any list on the page, and so the size of one page of a long list. */
    static final int PAGE = 20;

    /** One page of a long list: its rows, which page ({@code 0}: the first) and how many there are in all. */
    record ListPage<T>(int page, long total, List<T> rows) {
    }

    record ErasureDone(Instant erasedAt, String erasedBy, String subject, String key, String counts) {
    }

    /** Unfinished work items of one kind in one state; {@code oldestDue} is null when none is due yet. */
    record WorkCount(String kind, String state, long items, Instant oldestDue) {
    }

    /** {@code lastError} as stored: the view redacts it. */
    record ParkedItem(long id, String kind, int attempts, Instant parkedAt, String lastError) {
    }

    /** A side effect started and never recorded, with no live run of its item; {@code result} as stored: the view redacts it. */
    record EffectToSettle(String key, Long workItemId, Instant startedAt, String result) {
    }

    /** An action taken from the page; {@code cancellable} while it runs in the background and no one asked it to stop. */
    record RecentAction(long id, Instant actedAt, String actedBy, String action, String target, String outcome, boolean cancellable) {
    }

    /** {@code oldestOpenSince} is null when none is open. */
    record Albums(long open, Instant oldestOpenSince, ListPage<AlbumNeedingAPerson> needingAPerson) {
    }

    record AlbumNeedingAPerson(String key, int decidedVersion, Instant lastChildAt) {
    }

    /** Attachments by status: those not finished (pending, failed), and those received in the last 24 hours. */
    record AttachmentCounts(Map<String, Long> unfinished, Map<String, Long> receivedLastDay) {
    }

    /**
     * A polled bot's checkpoint, lease and loss records; {@code holder} is null without a lease row,
     * {@code lastGap} ("from..to") null without a gap.
     */
    record Bot(String name, long id, long nextOffset, Instant lastPoll, Instant lastBatch, long storedCount, String holder,
               boolean leaseActive, long lossWindows, Instant lastLossUntil, long gaps, String lastGap) {
    }

    /** A signed-webhook channel and workspace with deliveries stored: the newest, and how many are unmapped. */
    record WebhookChannel(String channel, String workspace, Instant lastDelivery, long unmapped) {
    }

    /** A process sharing the database, from its heartbeat; {@code heldBackSince} is null while its handlers are not held back. */
    record Process(String id, String host, long pid, Instant startedAt, Instant beatAt, boolean dead, Instant heldBackSince) {
    }
}
