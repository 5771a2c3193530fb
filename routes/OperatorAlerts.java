// Operator alerts: a Java DSL route file, compiled when the runner starts and again whenever this
// file changes (no rebuild). Every operator-alerts.check-seconds it looks for what needs a person.
// A finding sends one message when it starts and one when it is over (OperatorAlertLedger keeps
// them in PostgreSQL: replicas agree, a restart resends nothing), at most one message per
// operator-alerts.min-seconds-between-messages, listing what is new, through
// direct:operator-alert-send (routes/operator-alerts.yaml chooses where it goes). Findings:
//   - Telegram bots not polling: no successful poll for operator-alerts.not-polling-seconds (the
//     Bot API down, a revoked token answering 401, a webhook set on the bot; telegram status),
//     unless an operator paused them
//   - work of a kind parked: operator-alerts.parked-per-10-minutes or more items of a kind parked
//     in the last 10 minutes, one finding with the count (work status / work retry --kind K)
//   - work of a kind whose oldest due item waited longer than operator-alerts.max-pending-age-seconds
//     while intake is healthy (no bot's polling stopped): its handlers are starved or stalled
//     (a kind an operator paused waits on purpose)
//   - albums waiting for a person (albums status)
//   - possible loss windows recorded for a bot, and updates confirmed outside this store (a
//     forgotten poller or a manual getUpdates)
//   - a bot paused for 20 h: Telegram keeps updates 24 h, so the oldest it holds begin to expire
//     4 h later (telegram resume --bot NAME)
//   - the database's oldest open transaction, open longer than chat-intake.db.open-transaction-warn-seconds
//     (a session left idle in transaction holds vacuum back): its backend pid, application, state, age
// A new finding is one more entry in FINDINGS. Off while operator-alerts.telegram-chat-id
// (OPERATOR_ALERTS_TELEGRAM_CHAT_ID) is empty.

import io.chatintake.ops.OperatorAlertLedger;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.apache.camel.LoggingLevel;
import org.apache.camel.builder.RouteBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class OperatorAlerts extends RouteBuilder {
    private static final Logger LOG = LoggerFactory.getLogger("io.chatintake.operator-alerts");
    /** The name the gap between messages is kept under: the one destination routes/operator-alerts.yaml sends to. */
    private static final String DESTINATION = "operator-alert-send";

    // What needs a person now, one SELECT of (finding, text) each: `finding` names it stably (it
    // starts when a check first sees it and is over when a check no longer does), `text` says what
    // and what to do. Parameters (camel-sql's :?name, from headers) are the configured limits.
    private static final List<String> FINDINGS = List.of(
            """
            SELECT 'bot-not-polling:' || bot_id,
                   'chat-intake: telegram bot ''' || bot_name || ''' (' || bot_id || ') has not polled since '
                       || coalesce(to_char(last_poll_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'it was first seen')
                       || ' (Bot API down? token revoked? webhook set?). java -jar chat-intake.jar telegram status'
              FROM polling_stopped""",
            """
            SELECT 'work-parked:' || kind,
                   'chat-intake: ' || count(*) || ' ' || kind || ' work item(s) parked in the last 10 minutes; the latest, #'
                       || (array_agg(id ORDER BY updated_at DESC))[1] || ', after '
                       || (array_agg(attempts ORDER BY updated_at DESC))[1] || ' attempt(s): '
                       || left(coalesce((array_agg(last_error ORDER BY updated_at DESC))[1], ''), 300)
                       || '. java -jar chat-intake.jar work status / work retry --kind ' || kind
              FROM work_item WHERE state = 'parked' AND updated_at >= now() - interval '10 minutes'
             GROUP BY kind HAVING count(*) >= :?parkedPer10Minutes""",
            """
            SELECT 'work-waiting:' || w.kind,
                   'chat-intake: ' || w.kind || ' work is not handled: its oldest due item has waited '
                       || extract(epoch FROM now() - w.due_since)::bigint || ' s while intake is healthy; handling is '
                       || coalesce('held back for intake since ' || to_char(h.since AT TIME ZONE 'UTC', 'HH24:MI:SS') || ' UTC',
                                   'not held back (handlers stalled?)') || '. java -jar chat-intake.jar work status'
              FROM (SELECT kind, min(next_attempt_at) AS due_since FROM work_item
                     WHERE state IN ('pending', 'failed') AND next_attempt_at <= now() GROUP BY kind) w, held_back h
             WHERE w.due_since < now() - make_interval(secs => :?maxPendingAgeSeconds) AND NOT EXISTS (SELECT 1 FROM polling_stopped)
               AND w.kind NOT IN (SELECT name FROM operator_pause WHERE subject = 'work-kind')""",
            """
            SELECT 'album-needs-person:' || album_key || ':' || decided_version,
                   'chat-intake: album ' || album_id || ' in conversation ' || conversation_id || ' (' || provider
                       || ') needs a person: its children disagree on total or index. java -jar chat-intake.jar albums status'
              FROM album WHERE needs_person""",
            """
            SELECT 'telegram-loss-window:' || id,
                   'chat-intake: telegram bot ' || bot_id || ' may have lost updates between '
                       || to_char(from_time AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' and '
                       || to_char(to_time AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC (Telegram keeps updates 24 h)'
              FROM telegram_loss_window""",
            """
            SELECT 'telegram-gap:' || id,
                   'chat-intake: telegram bot ' || bot_id || ': updates ' || from_update_id || '..' || to_update_id
                       || ' were confirmed outside this store (another getUpdates caller: find and stop it)'
              FROM telegram_gap""",
            """
            SELECT 'telegram-paused-20h:' || name,
                   'chat-intake: telegram bot ''' || name || ''' has been paused since '
                       || to_char(paused_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC by ' || paused_by
                       || '. Telegram keeps updates only 24 h: those it received right after the pause expire unseen from '
                       || to_char((paused_at + interval '24 hours') AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
                       || ' UTC. java -jar chat-intake.jar telegram resume --bot ' || name
              FROM operator_pause WHERE subject = 'telegram-bot' AND paused_at <= now() - interval '20 hours'""",
            """
            SELECT 'open-transaction:' || pid || ':' || (extract(epoch FROM xact_start) * 1000)::bigint,
                   'chat-intake: database backend ' || pid || ' ('
                       || coalesce('application ''' || nullif(application_name, '') || '''', 'no application name') || ', '
                       || coalesce(state, 'state not visible to this role') || ') has held a transaction open for '
                       || (extract(epoch FROM clock_timestamp() - xact_start) / 60)::bigint
                       || ' min: vacuum is held back until it ends (SELECT pg_terminate_backend(' || pid || ') ends it)'
              FROM (SELECT pid, application_name, state, xact_start FROM pg_stat_activity
                     WHERE xact_start < clock_timestamp() - make_interval(secs => :?openTransactionWarnSeconds) AND datname = current_database()
                       AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                     ORDER BY xact_start LIMIT 1) oldest""");

    // What several findings share: the bots whose polling stopped, and since when a live process
    // holds its handlers back for intake (a dead one's word is stale).
    private static final String SEEN_NOW = """
            WITH polling_stopped AS (
                SELECT bot_id, bot_name, last_poll_at FROM telegram_checkpoint
                 WHERE coalesce(last_poll_at, updated_at) < now() - make_interval(secs => :?notPollingSeconds)
                   AND bot_name NOT IN (SELECT name FROM operator_pause WHERE subject = 'telegram-bot')),
            held_back AS (
                SELECT min(held_back_since) AS since FROM runner_heartbeat
                 WHERE held_back_since IS NOT NULL AND beat_at >= now() - make_interval(secs => :?deadAfterSeconds))
            SELECT finding, text FROM (
            """ + String.join("\nUNION ALL\n", FINDINGS) + "\n) f (finding, text)";

    @Override
    public void configure() {
        String chat = getContext().resolvePropertyPlaceholders("{{operator-alerts.telegram-chat-id}}").trim();
        if (chat.isEmpty()) {
            LOG.info("operator alerts: OFF: no operator chat configured; set OPERATOR_ALERTS_TELEGRAM_CHAT_ID (operator-alerts.telegram-chat-id)");
            return;
        }
        long checkMillis = (long) (number("{{operator-alerts.check-seconds}}") * 1000);
        Duration gap = Duration.ofMillis((long) (number("{{operator-alerts.min-seconds-between-messages}}") * 1000));
        LOG.info("operator alerts: findings starting and ending go to Telegram chat {}, checked every {} s, at most one message per {} s",
                chat, checkMillis / 1000.0, gap.toMillis() / 1000.0);
        // As the work dispatcher counts a process dead: its last word on holding handlers back is then stale.
        double deadAfterSeconds = number("{{work.heartbeat-seconds}}") * number("{{work.dead-after-heartbeats}}");
        OperatorAlertLedger ledger = new OperatorAlertLedger(getContext().getRegistry().lookupByNameAndType("dataSource", DataSource.class));

        // A send that failed is tried again at the next check, unless it may have arrived (the
        // guard then leaves it for a person); the exception's text is not logged (a Bot API error
        // can quote the token in its URL).
        onException(Exception.class).handled(true)
                .log(LoggingLevel.WARN, "io.chatintake.operator-alerts",
                        "operator alert ${header.ChatIntakeWorkIdempotencyKey} not confirmed sent (${exception.class.simpleName}): see outbound_effect");

        // The first check a few seconds after the start (sooner when checks are more frequent than that).
        from("timer:operator-alerts?delay=" + Math.min(5000, checkMillis) + "&period=" + checkMillis).routeId("operator-alerts")
                .setHeader("deadAfterSeconds", constant(deadAfterSeconds))
                .setHeader("notPollingSeconds", constant(number("{{operator-alerts.not-polling-seconds}}")))
                .setHeader("maxPendingAgeSeconds", constant(number("{{operator-alerts.max-pending-age-seconds}}")))
                .setHeader("parkedPer10Minutes", constant((long) number("{{operator-alerts.parked-per-10-minutes}}")))
                .setHeader("openTransactionWarnSeconds", constant(number("{{chat-intake.db.open-transaction-warn-seconds}}")))
                // The query is the body: too long (and too full of ? and +) for an endpoint URI.
                .setBody(constant(SEEN_NOW))
                .to("sql:operator-alert-findings?dataSource=#dataSource&useMessageBodyForSql=true")
                .process(exchange -> ledger.observe(exchange.getMessage().getBody(List.class)))
                .process(exchange -> {
                    Optional<OperatorAlertLedger.Message> due = ledger.next(DESTINATION, gap);
                    exchange.getMessage().setBody(due.map(OperatorAlertLedger.Message::text).orElse(null));
                    exchange.getMessage().setHeader("ChatIntakeWorkIdempotencyKey", due.map(OperatorAlertLedger.Message::key).orElse(null));
                    exchange.getMessage().setHeader("OperatorAlertMessageId", due.map(OperatorAlertLedger.Message::id).orElse(null));
                })
                .filter(header("OperatorAlertMessageId").isNotNull())
                    .to("direct:operator-alert-send")
                    .process(exchange -> ledger.sent(exchange.getMessage().getHeader("OperatorAlertMessageId", Long.class)))
                .end();
    }

    /** A configured number; a missing key fails the route file's start, naming it. */
    private double number(String placeholder) {
        return Double.parseDouble(getContext().resolvePropertyPlaceholders(placeholder).trim());
    }
}
