package io.chatintake.ops;

import io.chatintake.channel.webhook.SignatureScheme;
import io.chatintake.channel.webhook.WebhookRouteFile;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.sim.SignedDeliverySender;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code send CHANNEL --file BODY [--url URL] [--content-type TYPE]}: the manual check after adding
 * a channel. BODY is signed the way the channel's route verifies it (the {@code scheme} and
 * {@code secretsKey} of its {@code webhook-inbox:CHANNEL} step in the routes directory, the
 * secret from the configuration or environment) and posted to the route's path on this
 * configuration's HTTP port, or to URL; the answer's status and body are printed.
 */
public final class SendCommand {
    private static final String USAGE = "usage: send CHANNEL --file BODY [--url URL] [--content-type TYPE]";
    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{([^:}]+)(?::([^}]*))?}}");

    private final Settings settings;
    private final Path routesDir;
    private final PrintStream out;

    public SendCommand(Settings settings, Path routesDir, PrintStream out) {
        this.settings = settings;
        this.routesDir = routesDir;
        this.out = out;
    }

    /** @return 0 when the answer is 2xx, 1 otherwise */
    public int run(List<String> args) {
        if (args.isEmpty() || args.get(0).startsWith("--") || option(args, "--file") == null) {
            throw new ConfigurationException(USAGE);
        }
        String channel = args.get(0);
        WebhookRouteFile.Step step = WebhookRouteFile.find(routesDir, channel).orElseThrow(() -> new ConfigurationException(
                "send: no route in " + routesDir + " has a webhook-inbox:" + channel + " step"));
        String secretsKey = resolve(step.parameters().getOrDefault("secretsKey", channel + ".signing-secrets"));
        Secret secret = settings.get(secretsKey).map(v -> v.split(",")[0].trim()).filter(v -> !v.isEmpty()).map(Secret::of)
                .orElseThrow(() -> new ConfigurationException("send: no signing secret for " + channel + ": set " + secretsKey
                        + " (" + Settings.envName(secretsKey) + "); nothing sent"));
        String scheme = resolve(step.parameters().getOrDefault("scheme", ""));
        if (scheme.isBlank()) {
            throw new ConfigurationException("send: " + step.file() + ": the webhook-inbox:" + channel + " step has no scheme; nothing sent");
        }
        URI url = URI.create(option(args, "--url") != null ? option(args, "--url") : defaultUrl(step));
        byte[] body;
        try {
            body = Files.readAllBytes(Path.of(option(args, "--file")));
        } catch (IOException e) {
            throw new ConfigurationException("send: cannot read " + option(args, "--file") + ": " + e.getMessage() + "; nothing sent");
        }
        String contentType = option(args, "--content-type") != null ? option(args, "--content-type") : "application/json";
        SignedDeliverySender.Response response = new SignedDeliverySender(url, secret, SignatureScheme.parse(scheme))
                .postSigned(body, contentType);
        if (response.status() == 0) {
            out.println("POST " + url + ": no answer (" + response.body() + ")");
            return 1;
        }
        out.println("POST " + url + " (" + channel + ", scheme " + scheme.split(";")[0] + ", " + body.length + " bytes): " + response.status());
        out.println(response.body());
        return response.status() / 100 == 2 ? 0 : 1;
    }

    /** The route's path on this configuration's HTTP port on loopback. */
    private String defaultUrl(WebhookRouteFile.Step step) {
        String path = step.httpPath();
        if (path.contains("{")) {
            throw new ConfigurationException("send: the route's path " + path + " has parameters: give the whole URL with --url");
        }
        return "http://127.0.0.1:" + settings.getInt("chat-intake.http.port") + path;
    }

    /** A parameter's {@code {{key}}} / {@code {{key:default}}} placeholders from the configuration. */
    private String resolve(String value) {
        Matcher m = PLACEHOLDER.matcher(value);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String replacement = settings.get(m.group(1).trim()).or(() -> Optional.ofNullable(m.group(2))).orElseThrow(() ->
                    new ConfigurationException("send: " + m.group() + " has no value: set " + m.group(1) + "; nothing sent"));
            m.appendReplacement(out, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static String option(List<String> args, String name) {
        int at = args.indexOf(name);
        return at >= 0 && at + 1 < args.size() ? args.get(at + 1) : null;
    }
}
