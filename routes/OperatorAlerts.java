// Operator alerts: a Java DSL route file, compiled when the runner starts and again whenever this
// file changes (no rebuild). Every minute it looks for what needs a person and sends each NEW
// finding once to the operator chat through direct:operator-alert-send (routes/operator-alerts.yaml):
//   - work items parked after their last attempt (work status / work retry)
//   - albums waiting for a person (albums status)
//   - Telegram bots whose polling stopped: no successful poll for 5 minutes (a revoked token
//     answering 401, a webhook set on the bot, ...; telegram status), unless an operator paused them
//   - a bot paused for 20 h: Telegram keeps updates 24 h, so the oldest it holds begin to expire
//     4 h later (telegram resume --bot NAME)
//   - possible loss windows recorded for a bot
//   - updates confirmed outside this store (a forgotten poller or a manual getUpdates)
//   - work of a kind due for longer than operator-alerts.max-pending-age-seconds while intake is
//     healthy (no bot's polling stopped): its handlers are starved or stalled, not waiting for intake
//     (a kind an operator paused waits on purpose)
// A finding is new while no alert for it is recorded in outbound_effect; the key names the
// finding and its occurrence (a work item parked again is a new finding; work still waiting is
// a new finding each hour).
// Off while operator-alerts.telegram-chat-id (OPERATOR_ALERTS_TELEGRAM_CHAT_ID) is empty.

import org.apache.camel.LoggingLevel;
import org.apache.camel.builder.RouteBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class OperatorAlerts extends RouteBuilder {
    private static final Logger LOG = LoggerFactory.getLogger("io.chatintake.operator-alerts");
    private static final int MAX_PER_CHECK = 20;

    // Every finding as (finding, text), through camel-sql; those already alerted (an
    // outbound_effect row) are left out. Parameters, from headers (:?name, camel-sql's named
    // parameter in a query body): the silence after which a process is dead, the longest a due
    // item may wait, the limit.
    private static final String NEW_FINDINGS = """
            WITH polling_stopped AS (
                SELECT bot_id, bot_name, last_poll_at, updated_at FROM telegram_checkpoint
                 WHERE coalesce(last_poll_at, updated_at) < now() - interval '5 minutes'
                   AND bot_name NOT IN (SELECT name FROM operator_pause WHERE subject = 'telegram-bot')),
            held_back AS (
                SELECT min(held_back_since) AS since FROM runner_heartbeat
                 WHERE held_back_since IS NOT NULL AND beat_at >= now() - make_interval(secs => :?deadAfterSeconds))
            SELECT finding, text FROM (
                SELECT 'work-parked:' || id || ':' || (extract(epoch FROM updated_at) * 1000)::bigint AS finding,
                       'chat-intake: work item ' || id || ' (' || kind || ' ' || source_key || ') parked after '
                           || attempts || ' attempt(s): ' || left(coalesce(last_error, ''), 300)
                           || '. java -jar chat-intake.jar work status / work retry --id ' || id AS text,
                       updated_at AS seen_at
                  FROM work_item WHERE state = 'parked'
                UNION ALL
                SELECT 'album-needs-person:' || album_key || ':' || decided_version,
                       'chat-intake: album ' || album_id || ' in conversation ' || conversation_id || ' (' || provider
                           || ') needs a person: its children disagree on total or index. java -jar chat-intake.jar albums status',
                       coalesce(decided_at, last_child_at)
                  FROM album WHERE needs_person
                UNION ALL
                SELECT 'bot-polling-stopped:' || bot_id || ':' || coalesce((extract(epoch FROM last_poll_at) * 1000)::bigint, 0),
                       'chat-intake: telegram bot ''' || bot_name || ''' (' || bot_id || ') has not polled since '
                           || coalesce(to_char(last_poll_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'it was first seen')
                           || ' (token revoked? webhook set?). java -jar chat-intake.jar telegram status',
                       coalesce(last_poll_at, updated_at)
                  FROM polling_stopped
                UNION ALL
                SELECT 'telegram-loss-window:' || id,
                       'chat-intake: telegram bot ' || bot_id || ' may have lost updates between '
                           || to_char(from_time AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' and '
                           || to_char(to_time AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC (Telegram keeps updates 24 h)',
                       recorded_at
                  FROM telegram_loss_window
                UNION ALL
                SELECT 'telegram-gap:' || id,
                       'chat-intake: telegram bot ' || bot_id || ': updates ' || from_update_id || '..' || to_update_id
                           || ' were confirmed outside this store (another getUpdates caller: find and stop it)',
                       detected_at
                  FROM telegram_gap
                UNION ALL
                SELECT 'telegram-paused-20h:' || name || ':' || (extract(epoch FROM paused_at) * 1000)::bigint,
                       'chat-intake: telegram bot ''' || name || ''' has been paused since '
                           || to_char(paused_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC by ' || paused_by
                           || '. Telegram keeps updates only 24 h: those it received right after the pause expire unseen from '
                           || to_char((paused_at + interval '24 hours') AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
                           || ' UTC. java -jar chat-intake.jar telegram resume --bot ' || name,
                       paused_at + interval '20 hours'
                  FROM operator_pause WHERE subject = 'telegram-bot' AND paused_at <= now() - interval '20 hours'
                UNION ALL
                SELECT 'work-waiting:' || w.kind || ':' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24'),
                       'chat-intake: ' || w.kind || ' work is not handled: its oldest due item has waited '
                           || extract(epoch FROM now() - w.due_since)::bigint || ' s while intake is healthy; handling is '
                           || coalesce('held back for intake since ' || to_char(h.since AT TIME ZONE 'UTC', 'HH24:MI:SS') || ' UTC',
                                       'not held back (handlers stalled?)') || '. java -jar chat-intake.jar work status',
                       w.due_since
                  FROM (SELECT kind, min(next_attempt_at) AS due_since FROM work_item
                         WHERE state IN ('pending', 'failed') AND next_attempt_at <= now() GROUP BY kind) w, held_back h
                 WHERE w.due_since < now() - make_interval(secs => :?maxPendingAgeSeconds) AND NOT EXISTS (SELECT 1 FROM polling_stopped)
                   AND w.kind NOT IN (SELECT name FROM operator_pause WHERE subject = 'work-kind')
            ) f
             WHERE NOT EXISTS (SELECT 1 FROM outbound_effect e WHERE e.effect_key = f.finding || ':operator-alert')
             ORDER BY seen_at
             LIMIT :?limit""";

    @Override
    public void configure() {
        String chat = getContext().resolvePropertyPlaceholders("{{operator-alerts.telegram-chat-id}}").trim();
        if (chat.isEmpty()) {
            LOG.info("operator alerts: OFF: no operator chat configured; set OPERATOR_ALERTS_TELEGRAM_CHAT_ID (operator-alerts.telegram-chat-id)");
            return;
        }
        LOG.info("operator alerts: new findings are sent to Telegram chat {} every minute", chat);
        // As the work dispatcher counts a process dead: its last word on holding handlers back is then stale.
        double deadAfterSeconds = number("{{work.heartbeat-seconds}}") * number("{{work.dead-after-heartbeats}}");

        // A send that failed may still have arrived: the guard keeps it from being repeated, and
        // the exception's text is not logged (a Bot API error can quote the token in its URL).
        onException(Exception.class).handled(true)
                .log(LoggingLevel.WARN, "io.chatintake.operator-alerts",
                        "operator alert ${header.IdempotencyKey} not confirmed sent (${exception.class.simpleName}); not repeated: see outbound_effect");

        from("timer:operator-alerts?delay=5000&period=60000").routeId("operator-alerts")
                .setHeader("deadAfterSeconds", constant(deadAfterSeconds))
                .setHeader("maxPendingAgeSeconds", constant(number("{{operator-alerts.max-pending-age-seconds}}")))
                .setHeader("limit", constant(MAX_PER_CHECK))
                // The query is the body: too long (and too full of ? and +) for an endpoint URI.
                .setBody(constant(NEW_FINDINGS))
                .to("sql:operator-alert-findings?dataSource=#dataSource&useMessageBodyForSql=true")
                .split(body())
                    .setHeader("IdempotencyKey", simple("${body[finding]}"))
                    .setBody(simple("${body[text]}"))
                    .to("direct:operator-alert-send")
                .end();
    }

    /** A configured number; a missing key fails the route file's start, naming it. */
    private double number(String placeholder) {
        return Double.parseDouble(getContext().resolvePropertyPlaceholders(placeholder).trim());
    }
}
