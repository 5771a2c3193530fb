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
 * so that the token never has to appear in a route's URI; a {@code token} URI option exists for
 * completeness and is masked.
 */
public abstract class ConfiguredBotEndpoint extends DefaultEndpoint {
    @UriPath(description = "Name of the bot in this configuration: labels logs and metrics, selects the token")
    @Metadata(required = true)
    private final String botName;
    @UriParam(label = "security", secret = true, description = "Bot token; prefer the configuration key so it stays out of URIs")
    private String token;
    @UriParam(description = "Configuration key holding the token (default telegram.bot-token for 'main', telegram.bots.<name>.token otherwise)")
    private String tokenProperty;
    @UriParam(description = "Bot API base URL (default: configuration key telegram.api-url, else https://api.telegram.org)")
    private String apiUrl;

    protected ConfiguredBotEndpoint(String uri, Component component, String botName) {
        super(uri, component);
        this.botName = botName;
    }

    /** The configuration key the token is read from, named in messages about a missing token. */
    String tokenKey() {
        return TelegramBots.tokenKey(botName, tokenProperty);
    }

    Optional<Secret> resolveToken() {
        return TelegramBots.token(botName, token, tokenProperty, this::property);
    }

    String resolveApiUrl() {
        return TelegramBots.apiUrl(apiUrl, this::property);
    }

    protected Optional<String> property(String key) {
        return getCamelContext().getPropertiesComponent().resolveProperty(key);
    }

    public String getBotName() {
        return botName;
    }

    public String getToken() {
        return token;
    }

    public void setToken(String token) {
        this.token = token;
    }

    public String getTokenProperty() {
        return tokenProperty;
    }

    public void setTokenProperty(String tokenProperty) {
        this.tokenProperty = tokenProperty;
    }

    public String getApiUrl() {
        return apiUrl;
    }

    public void setApiUrl(String apiUrl) {
        this.apiUrl = apiUrl;
    }
}
