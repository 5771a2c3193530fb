package io.chatintake.channel.telegram;

import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/**
 * How an endpoint reaches its bot: the token and the Bot API server, both normally from the
 * configuration ({@link TelegramBots}), so that the token never has to appear in a route's URI.
 */
@UriParams
public class BotAccess {
    @UriParam(label = "security", secret = true, description = "Bot token; prefer the configuration key so it stays out of URIs")
    private String token;
    @UriParam(label = "security", description = "Configuration key holding the token (default telegram.bot-token for 'main',"
            + " telegram.bots.NAME.token otherwise)")
    private String tokenProperty;
    @UriParam(label = "advanced", description = "Bot API base URL (default: configuration key telegram.api-url, else https://api.telegram.org)")
    private String apiUrl;

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
