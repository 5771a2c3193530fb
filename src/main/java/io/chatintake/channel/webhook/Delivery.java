package io.chatintake.channel.webhook;

import java.util.function.Function;

/**
 * One HTTP request as received: the raw body bytes (whatever the content type: platform-http
 * turns a form-encoded body into a map before any route sees it, which would make the
 * signature uncheckable), the request's own headers, and the route's parameters (path
 * parameters such as {@code {bot}}, query parameters).
 *
 * @param header a request header by name, case-insensitive; null when absent
 * @param param  a path or query parameter by name; null when absent
 */
public record Delivery(String method, byte[] body, String contentType, Function<String, String> header,
                       Function<String, String> param) {

    @Override
    public String toString() {
        // The body and headers (signatures, tokens) stay out of any accidental log line.
        return "Delivery[" + method + ", " + body.length + " bytes]";
    }
}
