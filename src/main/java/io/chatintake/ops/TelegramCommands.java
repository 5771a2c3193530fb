package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.Migrations;
import io.chatintake.store.OperatorPause;
import io.chatintake.channel.telegram.BotApiClient;
import io.chatintake.channel.telegram.BotApiException;
import io.chatintake.channel.telegram.LossWindow;
import io.chatintake.channel.telegram.OffsetCheckpoint;
import io.chatintake.channel.telegram.PollLease;
import io.chatintake.channel.telegram.ScheduleCheckpoint;
import io.chatintake.channel.telegram.TelegramBots;
import io.chatintake.config.Secret;
import io.chatintake.channel.telegram.UpdateGap;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code telegram status}, {@code telegram switch-to-polling --bot NAME},
 * {@code telegram set-webhook --bot NAME --url URL} and {@code telegram pause|resume --bot NAME}
 * ({@link PauseCommand}). None ever calls getUpdates: only the poller may confirm updates, so
 * troubleshooting cannot advance production progress.
 */
public final class TelegramCommands {
    private final Settings settings;
    private final PrintStream out;

    public TelegramCommands(Settings settings, PrintStream out) {
        this.settings = settings;
        this.out = out;
    }

    public int run(List<String> args) {
        String sub = args.isEmpty() ? "status" : args.get(0);
        return switch (sub) {
            case "status" -> status();
            case "switch-to-polling" -> switchToPolling(botArgument(args));
            case "set-webhook" -> setWebhook(botArgument(args), argument(args, "--url"));
            case "pause", "resume" -> PauseCommand.run(settings, out, OperatorPause.Subject.TELEGRAM_BOT, args);
            default -> throw new ConfigurationException("unknown telegram command '" + sub
                    + "' (status, switch-to-polling --bot NAME, set-webhook --bot NAME --url URL, pause|resume --bot NAME)");
        };
    }

    private int status() {
        try (Database database = Database.openForCommand(settings)) {
            Migrations.requireCurrent(database.dataSource());
            OffsetCheckpoint checkpoints = new OffsetCheckpoint(database.dataSource());
            PollLease leases = new PollLease(database.dataSource());
            LossWindow lossWindows = new LossWindow(database.dataSource());
            UpdateGap updateGaps = new UpdateGap(database.dataSource());
            ScheduleCheckpoint schedule = new ScheduleCheckpoint(database.dataSource());
            List<Long> bots = botIds(database);
            Map<String, OperatorPause.Paused> paused;
            try (Connection c = database.dataSource().getConnection()) {
                paused = OperatorPause.list(c, OperatorPause.Subject.TELEGRAM_BOT);
            }
            Set<String> notPolledYet = TelegramBots.configured(settings::get, settings.withPrefix("telegram.bots.").keySet());
            if (bots.isEmpty() && notPolledYet.isEmpty()) {
                out.println("no Telegram bot has polled this database yet");
            }
            for (long botId : bots) {
                OffsetCheckpoint.Saved saved = checkpoints.find(botId).orElseThrow();
                notPolledYet.remove(saved.botName());
                out.printf("bot %s (id %d)%n", saved.botName(), botId);
                out.printf("  next offset:          %d%n", saved.nextOffset());
                out.printf("  last successful poll: %s%n", saved.lastSuccessfulPoll().map(Object::toString).orElse("never"));
                out.printf("  updates stored:       %d (duplicates received again: %d)%n", saved.storedCount(), saved.duplicateCount());
                out.printf("  not yet scheduled:    %d stored update(s) waiting to become work%n", schedule.unscheduled(botId));
                OperatorPause.Paused pause = paused.get(saved.botName());
                out.printf("  paused:               %s%n", pause == null ? "no"
                        : "by " + pause.by() + " since " + pause.since() + " (telegram resume --bot " + saved.botName() + ")");
                out.printf("  lease holder:         %s%n", leases.current(botId)
                        .map(h -> h.holder() + " (fencing token " + h.fencingToken() + (h.expired() ? ", expired" : ", active") + ")")
                        .orElse("none"));
                out.printf("  pending at Telegram:  %s%n", pendingAtTelegram(saved.botName()));
                List<LossWindow.Window> windows = lossWindows.list(botId);
                out.printf("  possible loss windows: %s%n", windows.isEmpty() ? "none" : "");
                windows.forEach(w -> out.printf("    %s .. %s%n", w.from(), w.to()));
                List<UpdateGap.Gap> gaps = updateGaps.list(botId);
                out.printf("  confirmed outside this store: %s%n", gaps.isEmpty() ? "none" : "");
                gaps.forEach(g -> out.printf("    %s (detected %s)%n", g.describe(), g.detectedAt()));
            }
            for (String bot : notPolledYet) {
                out.printf("bot %s: configured (token set), not polled yet%n", bot);
            }
            return 0;
        } catch (SQLException e) {
            throw new ConfigurationException("cannot read the Telegram tables: " + e.getMessage(), e);
        }
    }

    /** getWebhookInfo only: it confirms nothing. */
    private String pendingAtTelegram(String botName) {
        Optional<BotApiClient> client = client(botName);
        if (client.isEmpty()) {
            return "unknown (no token configured: " + Settings.envName(TelegramBots.tokenKey(botName)) + ")";
        }
        try {
            BotApiClient.WebhookInfo info = client.get().getWebhookInfo();
            return info.pendingUpdateCount() + (info.webhookSet() ? " (a webhook is set: polling is refused; see switch-to-polling)" : "");
        } catch (BotApiException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }

    private int switchToPolling(String botName) {
        BotApiClient client = client(botName).orElseThrow(() -> new ConfigurationException(
                "no token for bot '" + botName + "': set " + Settings.envName(TelegramBots.tokenKey(botName))));
        try {
            BotApiClient.WebhookInfo before = client.getWebhookInfo();
            if (!before.webhookSet()) {
                out.printf("bot %s: no webhook is set; polling is already allowed (%d update(s) pending)%n", botName, before.pendingUpdateCount());
                return 0;
            }
            client.deleteWebhookKeepingUpdates();
            BotApiClient.WebhookInfo after = client.getWebhookInfo();
            if (after.webhookSet()) {
                out.printf("bot %s: deleteWebhook answered, but getWebhookInfo still shows a webhook; not switched%n", botName);
                return 1;
            }
            out.printf("bot %s: webhook removed, %d pending update(s) kept (drop_pending_updates=false); polling can start%n",
                    botName, after.pendingUpdateCount());
            return 0;
        } catch (BotApiException e) {
            out.printf("bot %s: the Bot API refused: %s%n", botName, e.getMessage());
            return 1;
        }
    }

    /**
     * Webhook mode for a bot: records the bot (id and name) so /webhooks/telegram/NAME can store its
     * updates, then setWebhook with telegram.webhook-secret as secret_token, every update type, and
     * the queued updates kept. {@code switch-to-polling} undoes it.
     */
    private int setWebhook(String botName, String url) {
        BotApiClient client = client(botName).orElseThrow(() -> new ConfigurationException(
                "no token for bot '" + botName + "': set " + Settings.envName(TelegramBots.tokenKey(botName))));
        Secret secret = settings.secret("telegram.webhook-secret").filter(s -> !s.isEmpty()).orElseThrow(() -> new ConfigurationException(
                "no webhook secret: set " + Settings.envName("telegram.webhook-secret") + " (the runner checks it on every update)"));
        try (Database database = Database.openForCommand(settings)) {
            Migrations.apply(database.forMigrations());
            BotApiClient.BotIdentity bot = client.getMe();
            new OffsetCheckpoint(database.dataSource()).load(bot.id(), botName);
            client.setWebhookKeepingUpdates(url, secret);
            BotApiClient.WebhookInfo after = client.getWebhookInfo();
            if (!url.equals(after.url())) {
                out.printf("bot %s: setWebhook answered, but getWebhookInfo shows another URL; check the bot%n", botName);
                return 1;
            }
            out.printf("bot %s (id %d): webhook set to %s for every update type, %d pending update(s) kept; polling stops%n",
                    botName, bot.id(), url, after.pendingUpdateCount());
            return 0;
        } catch (BotApiException e) {
            out.printf("bot %s: the Bot API refused: %s%n", botName, e.getMessage());
            return 1;
        } catch (SQLException e) {
            throw new ConfigurationException("cannot record bot '" + botName + "': " + e.getMessage(), e);
        }
    }

    private Optional<BotApiClient> client(String botName) {
        return TelegramBots.token(botName, null, null, settings::get)
                .map(token -> new BotApiClient(TelegramBots.apiUrl(null, settings::get), token));
    }

    private static String botArgument(List<String> args) {
        return argument(args, "--bot");
    }

    private static String argument(List<String> args, String name) {
        int i = args.indexOf(name);
        if (i < 0 || i + 1 >= args.size()) {
            throw new ConfigurationException(args.get(0) + " needs " + name + (name.equals("--bot")
                    ? " NAME (the bot's name in the routes, e.g. main)" : " VALUE"));
        }
        return args.get(i + 1);
    }

    private static List<Long> botIds(Database database) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (Connection c = database.dataSource().getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT bot_id FROM telegram_checkpoint ORDER BY bot_name");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
        }
        return ids;
    }
}
