package io.chatintake.channel.telegram;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.chatintake.config.Settings;
import io.chatintake.support.FormerHeaderNames;
import io.chatintake.work.DeferReason;
import io.chatintake.work.EffectFailure;
import io.chatintake.work.EffectOutcome;
import io.chatintake.work.TraceContext;
import io.chatintake.work.WorkDispatcher;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.support.DefaultProducer;

/**
 * Sends one Bot API call per exchange; nothing of one exchange is shared with another, so any
 * number of threads may send at once. A failure is thrown as an {@link EffectFailure} whose
 * outcome class tells the effect guard what happened: an {@code ok:false} answer, or a request
 * never written, is definitely not performed (retried); a send its chat's or bot's limit does not
 * allow yet, or a 429, is deferred to the time it may go (not an attempt: see {@link SendLimiter}); a
 * refusal for good (blocked, chat not found) is undeliverable; a timeout or reset after writing,
 * or a 5xx, is ambiguous.
 */
final class TelegramBotProducer extends DefaultProducer {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** 400 descriptions that no retry can change: the chat is gone or closed to this bot. */
    private static final Set<String> PERMANENT_400 = Set.of("chat not found", "user not found", "peer_id_invalid",
            "bot was kicked", "not enough rights", "have no rights", "chat_write_forbidden", "user is deactivated");

    private final TelegramBotEndpoint endpoint;

    TelegramBotProducer(TelegramBotEndpoint endpoint) {
        super(endpoint);
        this.endpoint = endpoint;
    }

    @Override
    public void process(Exchange exchange) throws Exception {
        Message message = exchange.getMessage();
        String method = endpoint.getMethod();
        String call = "telegram-bot:" + endpoint.getBotName() + " " + method;
        TelegramBotComponent.Sender sender = endpoint.sender().orElseThrow(() -> new EffectFailure(EffectOutcome.FAILED,
                call + ": no token configured (" + Settings.envName(endpoint.tokenKey()) + ")", null));
        ObjectNode params = params(message, method, call);
        String chat = params.hasNonNull("chat_id") ? params.get("chat_id").asText() : null;
        String target = call + (chat == null ? "" : " to chat " + chat);
        // Stored work goes back to wait for its slot, freeing the worker; a send of a route of its
        // own (an operator alert) has nowhere to go back to, so it waits here.
        boolean work = message.getHeader(WorkDispatcher.WORK_ITEM_ID) != null;
        while (true) {
            SendLimiter.Slot slot = slot(sender, chat, target);
            if (!slot.deferred()) {
                slot = onTime(sender, slot, target);
                if (slot == null) {
                    break;
                }
            }
            if (work) {
                throw new EffectFailure(slot.deferral(), target + ": not sent yet, the " + slot.deferral().label().replace('_', ' ')
                        + " allows the next send at " + slot.until(), slot.until());
            }
            sleep(Duration.between(Instant.now(), slot.until()).toNanos(), target);
        }
        JsonNode result;
        // The span names the bot and the method: never the Bot API URL, whose path holds the token.
        TraceContext.Call span = TraceContext.call("telegram-bot " + method, "chat_intake.bot", endpoint.getBotName(),
                "chat_intake.telegram.method", method);
        try {
            result = sender.client().call(method, params, Duration.ofSeconds(endpoint.getTimeoutSeconds()));
            sender.count(TelegramBotComponent.SendResult.SENT);
            span.end("done", 200);
        } catch (BotApiException e) {
            if (e.kind() == BotApiException.Kind.RATE_LIMITED) {
                sender.limiter().pause(chat, Duration.ofSeconds(Math.max(1, e.retryAfterSeconds())));
            }
            EffectFailure failure = failure(target, e);
            sender.count(e.kind() == BotApiException.Kind.RATE_LIMITED ? TelegramBotComponent.SendResult.RATE_LIMITED
                    : failure.outcome() == EffectOutcome.UNDELIVERABLE ? TelegramBotComponent.SendResult.UNDELIVERABLE
                    : TelegramBotComponent.SendResult.FAILED);
            span.end(failure.outcome().name().toLowerCase(Locale.ROOT), e.errorCode() > 0 ? e.errorCode() : null);
            throw failure;
        } finally {
            sender.limiter().sent(chat);
        }
        if (TelegramBotEndpoint.SEND_MESSAGE.equals(method)) {
            long messageId = result.path("message_id").asLong();
            message.setHeader(TelegramBotConstants.MESSAGE_ID, messageId);
            FormerHeaderNames.copy(message, TelegramBotConstants.FORMER_NAMES);
            message.setBody(messageId);
        } else {
            message.setBody(result.toString());
        }
    }

    private static SendLimiter.Slot slot(TelegramBotComponent.Sender sender, String chat, String target) throws EffectFailure {
        try {
            return sender.limiter().take(chat);
        } catch (SQLException e) {
            throw new EffectFailure(EffectOutcome.FAILED, target + ": the bot's send slot could not be taken (" + e.getMessage()
                    + "); not sent", null);
        }
    }

    /** Waits for the slot; null when the send may go now, else its deferral. */
    private static SendLimiter.Slot onTime(TelegramBotComponent.Sender sender, SendLimiter.Slot slot, String target) throws EffectFailure {
        try {
            return sender.limiter().await(slot);
        } catch (SQLException e) {
            throw new EffectFailure(EffectOutcome.FAILED, target + ": the bot's send slot could not be taken (" + e.getMessage()
                    + "); not sent", null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new EffectFailure(EffectOutcome.FAILED, target + ": interrupted before sending; not sent", null);
        }
    }

    private static void sleep(long nanos, String target) throws EffectFailure {
        if (nanos > 0) {
            try {
                TimeUnit.NANOSECONDS.sleep(nanos);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new EffectFailure(EffectOutcome.FAILED, target + ": interrupted before sending; not sent", null);
            }
        }
    }

    /** sendMessage: the body is the text (or the whole parameters as a map/JSON); others: the body is JSON. */
    private ObjectNode params(Message message, String method, String call) throws EffectFailure {
        Object body = message.getBody();
        ObjectNode params;
        if (body instanceof Map<?, ?> || body instanceof JsonNode) {
            JsonNode node = JSON.valueToTree(body);
            if (!node.isObject()) {
                throw new EffectFailure(EffectOutcome.FAILED, call + ": the body must be a JSON object of parameters", null);
            }
            params = (ObjectNode) node;
        } else if (TelegramBotEndpoint.SEND_MESSAGE.equals(method)) {
            String text = message.getBody(String.class);
            if (text == null || text.isEmpty()) {
                throw new EffectFailure(EffectOutcome.FAILED, call + ": the body (the text to send) is empty", null);
            }
            params = JSON.createObjectNode().put("text", text);
        } else {
            params = parseObject(message.getBody(String.class), call);
        }
        if (!params.hasNonNull("chat_id")) {
            String chat = endpoint.getChatId() != null ? endpoint.getChatId() : FormerHeaderNames.read(message, TelegramBotConstants.CHAT_ID,
                    TelegramBotConstants.FORMER_NAMES.get(TelegramBotConstants.CHAT_ID), String.class);
            if (chat != null && !chat.isBlank()) {
                params.set("chat_id", chatIdNode(chat.trim()));
            } else if (TelegramBotEndpoint.SEND_MESSAGE.equals(method)) {
                throw new EffectFailure(EffectOutcome.FAILED, call + ": no chat: set the " + TelegramBotConstants.CHAT_ID
                        + " header or chatId", null);
            }
        }
        return params;
    }

    private static ObjectNode parseObject(String json, String call) throws EffectFailure {
        try {
            JsonNode node = json == null ? null : JSON.readTree(json);
            if (node != null && node.isObject()) {
                return (ObjectNode) node;
            }
        } catch (IOException e) {
            // reported below
        }
        throw new EffectFailure(EffectOutcome.FAILED, call + ": the body must be a JSON object of parameters", null);
    }

    private static JsonNode chatIdNode(String chat) {
        try {
            return JSON.getNodeFactory().numberNode(Long.parseLong(chat));
        } catch (NumberFormatException e) {
            return JSON.getNodeFactory().textNode(chat);
        }
    }

    static EffectFailure failure(String target, BotApiException e) {
        String text = target + ": " + e.getMessage();
        return switch (e.kind()) {
            case RATE_LIMITED -> new EffectFailure(DeferReason.RETRY_AFTER, text, Instant.now().plusSeconds(Math.max(1, e.retryAfterSeconds())));
            case NOT_SENT, UNAUTHORIZED, CONFLICT_OTHER_POLLER, CONFLICT_WEBHOOK -> new EffectFailure(EffectOutcome.FAILED, text, null);
            case NETWORK -> new EffectFailure(EffectOutcome.AMBIGUOUS, text, null);
            case SERVER -> new EffectFailure(refusal(e), text, null);
        };
    }

    /** An error answer: 403 and a closed chat's 400 are for good; other 4xx not performed; 5xx (or no JSON) ambiguous. */
    private static EffectOutcome refusal(BotApiException e) {
        int code = e.errorCode();
        if (code == 403) {
            return EffectOutcome.UNDELIVERABLE;
        }
        if (code == 400) {
            String lower = e.getMessage().toLowerCase(Locale.ROOT);
            return PERMANENT_400.stream().anyMatch(lower::contains) ? EffectOutcome.UNDELIVERABLE : EffectOutcome.FAILED;
        }
        return code >= 400 && code < 500 ? EffectOutcome.FAILED : EffectOutcome.AMBIGUOUS;
    }
}
