package io.chatintake.channel.telegram;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.camel.CamelContext;
import org.apache.camel.model.Model;
import org.apache.camel.model.RouteDefinition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bots of {@code telegram.bots} as routes: one route {@code telegram-<name>} per listed bot,
 * created from the route template {@value #TEMPLATE} of {@code routes/telegram.yaml}. Called
 * before the routes start, so a listed bot's route is checked and started with every other
 * route, and again after each configuration check: a bot added to the list gets its route, a
 * removed one's route is stopped (its consumer releases the poll lease) and removed, and a route
 * lost to a reload of the template's file is created again. A bot that a hand-written route
 * already consumes ({@code telegram-inbox:<name>}) is left to that route.
 */
public final class TelegramBotRoutes {
    private static final Logger LOG = LoggerFactory.getLogger(TelegramBotRoutes.class);
    public static final String TEMPLATE = "telegram-bot-intake";
    private static final String INBOX = "telegram-inbox:";
    /** The template's parameter naming the bot; Camel keeps it on each route's definition. */
    private static final String BOT = "bot";

    private final CamelContext context;
    private String lastProblem;

    public TelegramBotRoutes(CamelContext context) {
        this.context = context;
    }

    public static String routeId(String bot) {
        return "telegram-" + bot;
    }

    /**
     * Brings the routes in line with the list. A route that does not start (a refused option, a
     * second poller) fails this call at start; later it is one line, and the other bots run.
     */
    public synchronized void sync(boolean failOnError) throws Exception {
        Model model = context.getCamelContextExtension().getContextPlugin(Model.class);
        List<String> listed;
        try {
            listed = TelegramBots.listed(key -> context.getPropertiesComponent().resolveProperty(key));
        } catch (ConfigurationException e) {
            if (failOnError) {
                throw e;
            }
            reportOnce(e.getMessage() + "; the bots polled so far keep polling");
            return;
        }
        if (model.getRouteTemplateDefinition(TEMPLATE) == null) {
            if (context.getPropertiesComponent().resolveProperty(TelegramBots.LIST_KEY).filter(v -> !v.isBlank()).isPresent()) {
                reportOnce(Settings.envName(TelegramBots.LIST_KEY) + " lists " + listed + " but no route template '" + TEMPLATE
                        + "' is loaded (routes/telegram.yaml); only hand-written telegram-inbox routes poll");
            }
            return;
        }
        Map<String, RouteDefinition> templated = new LinkedHashMap<>();
        Map<String, String> handWritten = new LinkedHashMap<>();
        for (RouteDefinition route : List.copyOf(model.getRouteDefinitions())) {
            Object bot = route.isCreatedFromTemplate() && route.getTemplateParameters() != null
                    ? route.getTemplateParameters().get(BOT) : null;
            if (bot != null && routeId(bot.toString()).equals(route.getRouteId())) {
                templated.put(bot.toString(), route);
            } else {
                inboxBot(route).ifPresent(name -> handWritten.put(name, route.getRouteId()));
            }
        }
        for (Map.Entry<String, RouteDefinition> route : templated.entrySet()) {
            if (!listed.contains(route.getKey())) {
                remove(model, route.getKey(), route.getValue());
            }
        }
        for (String bot : listed) {
            if (templated.containsKey(bot) || handWritten.containsKey(bot)) {
                continue;
            }
            if (model.getRouteDefinition(routeId(bot)) != null) {
                reportOnce("bot '" + bot + "': a route named " + routeId(bot) + " that is not its telegram-inbox route exists;"
                        + " the bot is not polled from the template");
                continue;
            }
            add(bot, failOnError);
        }
    }

    private void add(String bot, boolean failOnError) throws Exception {
        try {
            context.addRouteFromTemplate(routeId(bot), TEMPLATE, Map.of(BOT, bot));
            if (context.isStarted()) {
                LOG.info("telegram bot '{}': listed in {}; route {} started", bot, Settings.envName(TelegramBots.LIST_KEY), routeId(bot));
            }
        } catch (Exception e) {
            if (failOnError) {
                throw e;
            }
            reportOnce("telegram bot '" + bot + "': its route did not start, the other bots poll on: " + e.getMessage());
            Model model = context.getCamelContextExtension().getContextPlugin(Model.class);
            RouteDefinition half = model.getRouteDefinition(routeId(bot));
            if (half != null) {
                model.removeRouteDefinition(half);
            }
        }
    }

    private void remove(Model model, String bot, RouteDefinition route) throws Exception {
        context.getRouteController().stopRoute(route.getRouteId());
        model.removeRouteDefinition(route);
        LOG.info("telegram bot '{}': no longer listed in {}; route {} stopped and removed, its poll lease released",
                bot, Settings.envName(TelegramBots.LIST_KEY), route.getRouteId());
    }

    private static Optional<String> inboxBot(RouteDefinition route) {
        if (route.getInput() == null || route.getInput().getEndpointUri() == null) {
            return Optional.empty();
        }
        String uri = route.getInput().getEndpointUri();
        if (!uri.startsWith(INBOX)) {
            return Optional.empty();
        }
        String rest = uri.substring(INBOX.length());
        int query = rest.indexOf('?');
        return Optional.of(query < 0 ? rest : rest.substring(0, query));
    }

    private void reportOnce(String problem) {
        if (!problem.equals(lastProblem)) {
            LOG.warn("telegram bots: {}", problem);
            lastProblem = problem;
        }
    }
}
