package io.chatintake.channel.telegram;

import io.chatintake.config.Secret;
import java.util.Optional;
import org.apache.camel.Component;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriPath;
import org.apache.camel.support.DefaultEndpoint;

/**
 * An endpoint naming a bot of this configuration ({@code telegram-inbox:main},
 * {@code telegram-bot:main}): its token and Bot API server are resolved by {@link TelegramBots},
 * so that the token never has to appear in a route's URI ({@link BotAccess}).
 */
public abstract class ConfiguredBotEndpoint extends DefaultEndpoint {
    @UriPath(description = "Name of the bot in this configuration: labels logs and metrics, selects the token")
    @Metadata(required = true)
    private final String botName;
    @UriParam
    private BotAccess access = new BotAccess();

    protected ConfiguredBotEndpoint(String uri, Component component, String botName) {
        super(uri, component);
        this.botName = botName;
    }

    /** The configuration key the token is read from, named in messages about a missing token. */
    String tokenKey() {
        return TelegramBots.tokenKey(botName, access.getTokenProperty());
    }

    Optional<Secret> resolveToken() {
        return TelegramBots.token(botName, access.getToken(), access.getTokenProperty(), this::property);
    }

    String resolveApiUrl() {
        return TelegramBots.apiUrl(access.getApiUrl(), this::property);
    }

    protected Optional<String> property(String key) {
        return getCamelContext().getPropertiesComponent().resolveProperty(key);
    }

    public String getBotName() {
        return botName;
    }

    public BotAccess getAccess() {
        return access;
    }

    public void setAccess(BotAccess access) {
        this.access = access;
    }
}
