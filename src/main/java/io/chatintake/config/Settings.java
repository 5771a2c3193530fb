package io.chatintake.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The effective configuration: the jar's built-in {@code application.properties} (every default,
 * once), the configuration file over it ({@code config/application.properties}), and over both an
 * environment variable named after each key ({@code chat-intake.db.url} ->
 * {@code CHAT_INTAKE_DB_URL}, {@code telegram.bot-token} -> {@code TELEGRAM_BOT_TOKEN}).
 * Keys missing from both files can still be set from the environment when the code asks for them.
 * Code reads a key without a default of its own: a key nobody sets is a configuration error naming it.
 */
public final class Settings {
    /** Keys whose values are secrets: shown redacted, never logged. */
    private static final Set<String> SECRET_KEY_WORDS = Set.of("password", "token", "secret");
    /** Keys that routes name as holding secrets (a webhook's {@code secretsKey}, {@code verifyTokenKey}), whatever their names. */
    private static final Set<String> DECLARED_SECRET_KEYS = ConcurrentHashMap.newKeySet();
    /** A password in a URL, under any key: {@code //user:password@host}, or {@code ?password=} (pgjdbc's too). */
    private static final List<Pattern> URL_PASSWORDS = List.of(Pattern.compile("(//[^/@:\\s]*:)([^/@\\s]+)(@)"),
            Pattern.compile("(?i)([?&;](?:password|sslpassword|sslkey)=)([^&;\\s]+)()"));

    /** The jar's built-in defaults, as camel-main reads them too. */
    public static final String BUILT_IN = "application.properties";

    private final Path source;
    private final Map<String, String> values;
    private final Map<String, String> env;
    /** The keys the configuration file (or the caller) set, over the built-in defaults. */
    private final Set<String> given;
    /** Renamed keys the configuration file sets by their old names only ({@link RenamedKeys}). */
    private final Set<String> oldNamesInFile;

    private Settings(Path source, Map<String, String> values, Map<String, String> env, Set<String> given, Set<String> oldNamesInFile) {
        this.source = source;
        this.values = values;
        this.env = env;
        this.given = given;
        this.oldNamesInFile = oldNamesInFile;
    }

    public static Settings load(Path file, Map<String, String> env) {
        Map<String, String> fileValues = new TreeMap<>();
        if (Files.isRegularFile(file)) {
            try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                fileValues.putAll(read(reader));
            } catch (IOException e) {
                throw new ConfigurationException("cannot read configuration file " + file + ": " + e.getMessage(), e);
            }
        }
        return layered(Files.isRegularFile(file) ? file : null, fileValues, env);
    }

    /** The built-in defaults with these values over them (tests, benchmarks). */
    public static Settings of(Map<String, String> values) {
        return layered(null, values, Map.of());
    }

    private static Settings layered(Path source, Map<String, String> over, Map<String, String> env) {
        Map<String, String> values = builtIn();
        over.forEach((key, value) -> values.put(key, value.trim()));
        Set<String> given = new TreeSet<>(over.keySet());
        Set<String> oldNames = new TreeSet<>();
        RenamedKeys.oldToNew().forEach((oldKey, newKey) -> {
            if (over.containsKey(oldKey) && !over.containsKey(newKey)) {
                values.put(newKey, over.get(oldKey).trim());
                given.add(newKey);
                oldNames.add(oldKey);
            }
        });
        Settings settings = new Settings(source, values, Map.copyOf(env), Set.copyOf(given), Set.copyOf(oldNames));
        settings.values.replaceAll((key, value) -> settings.fromEnv(key).orElse(value));
        return settings;
    }

    /** The jar's built-in {@value #BUILT_IN}: empty when it is missing (a bare test classpath). */
    private static Map<String, String> builtIn() {
        try (InputStream in = Settings.class.getClassLoader().getResourceAsStream(BUILT_IN)) {
            return in == null ? new TreeMap<>() : read(new InputStreamReader(in, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new ConfigurationException("cannot read the built-in " + BUILT_IN + ": " + e.getMessage(), e);
        }
    }

    private static Map<String, String> read(Reader reader) throws IOException {
        Properties props = new Properties();
        props.load(reader);
        Map<String, String> values = new TreeMap<>();
        props.stringPropertyNames().forEach(key -> values.put(key, props.getProperty(key).trim()));
        return values;
    }

    /**
     * Values someone else already read and resolved (Camel's properties component: the file, its
     * placeholders, system and environment overrides); {@code env} still answers keys the file
     * does not list, e.g. {@code TELEGRAM_BOTS_SALES_TOKEN}.
     */
    public static Settings resolved(Path source, Map<String, String> values, Map<String, String> env) {
        Map<String, String> trimmed = new TreeMap<>();
        values.forEach((key, value) -> trimmed.put(key, value.trim()));
        return new Settings(source, trimmed, Map.copyOf(env), Set.copyOf(trimmed.keySet()), Set.of());
    }

    /** The environment variable that overrides a key. */
    public static String envName(String key) {
        return key.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
    }

    public Optional<Path> source() {
        return Optional.ofNullable(source);
    }

    /** A non-blank value, from the environment first, then the file. */
    public Optional<String> get(String key) {
        Optional<String> value = fromEnv(key).or(() -> Optional.ofNullable(values.get(key)));
        return value.map(String::trim).filter(v -> !v.isEmpty());
    }

    /** A value that must be set (the built-in defaults set it): missing, it is a configuration error naming the key. */
    public String value(String key) {
        return get(key).orElseThrow(() -> new ConfigurationException(envName(key) + " (" + key + ") is not set: not in the built-in"
                + " defaults, the configuration file or the environment"));
    }

    /** Where the key's effective value comes from; empty when nothing sets it. */
    public Optional<ValueSource> sourceOf(String key) {
        if (fromEnv(key).isPresent()) {
            return Optional.of(ValueSource.ENVIRONMENT);
        }
        if (given.contains(key)) {
            return Optional.of(ValueSource.FILE);
        }
        return values.containsKey(key) ? Optional.of(ValueSource.BUILT_IN) : Optional.empty();
    }

    /** A non-blank environment variable that is not a setting, e.g. one the platform sets. */
    public Optional<String> environment(String name) {
        return Optional.ofNullable(env.get(name)).map(String::trim).filter(v -> !v.isEmpty());
    }

    public Optional<Secret> secret(String key) {
        return get(key).map(Secret::of);
    }

    public int getInt(String key) {
        return parse(key, value(key), Integer::parseInt, "a whole number");
    }

    public long getLong(String key) {
        return parse(key, value(key), Long::parseLong, "a whole number");
    }

    public boolean getBoolean(String key) {
        return parse(key, value(key), Settings::parseBoolean, "true or false");
    }

    /** The keys starting with {@code prefix} that have a value, with their effective values. */
    public Map<String, String> withPrefix(String prefix) {
        Map<String, String> result = new TreeMap<>();
        values.keySet().stream().filter(k -> k.startsWith(prefix)).forEach(k -> get(k).ifPresent(v -> result.put(k, v)));
        return result;
    }

    /** Every key and its effective value, secrets redacted (passwords in URLs too): safe to print. */
    public Map<String, String> describe() {
        Map<String, String> result = new TreeMap<>();
        values.keySet().forEach(k -> result.put(k, isSecretKey(k) && get(k).isPresent() ? "[redacted]" : redactUrl(get(k).orElse(""))));
        return result;
    }

    /** A value as it may be shown: any password a URL in it carries replaced. */
    public static String redactUrl(String value) {
        String shown = value;
        for (Pattern password : URL_PASSWORDS) {
            shown = password.matcher(shown).replaceAll("$1[redacted]$3");
        }
        return shown;
    }

    /**
     * Every secret value this configuration holds, for the redactor: values of secret keys (each
     * part of a comma-separated list too, e.g. signing secrets while rotating), passwords in URLs
     * (a database URL's), and of environment
     * variables named like secrets, which covers keys set only from the environment
     * ({@code TELEGRAM_BOTS_SALES_TOKEN}).
     */
    public Set<String> secretValues() {
        Set<String> result = new LinkedHashSet<>();
        Consumer<String> add = value -> {
            result.add(value.trim());
            Arrays.stream(value.split(",")).map(String::trim).filter(v -> !v.isEmpty()).forEach(result::add);
        };
        values.keySet().stream().filter(Settings::isSecretKey).forEach(k -> get(k).ifPresent(add));
        values.keySet().forEach(k -> get(k).ifPresent(value -> URL_PASSWORDS.forEach(password -> {
            Matcher found = password.matcher(value);
            while (found.find()) {
                result.add(found.group(2));
            }
        })));
        env.forEach((name, value) -> {
            if (isSecretKey(name) && value != null && !value.isBlank()) {
                add.accept(value);
            }
        });
        return result;
    }

    /**
     * Camel's {@code camel.main.additional-sensitive-keywords}: Camel masks a property when the last
     * segment of its key (lower case, without '-') is among its own words or contained in this
     * list. Its own words miss {@code bot-token} and {@code signing-secrets}, so every secret key
     * of this configuration is named here.
     */
    public String camelSensitiveKeywords() {
        Set<String> words = new TreeSet<>(SECRET_KEY_WORDS);
        values.keySet().stream().filter(Settings::isSecretKey)
                .map(k -> k.substring(k.lastIndexOf('.') + 1).toLowerCase(Locale.ROOT).replace("-", ""))
                .forEach(words::add);
        return String.join(",", words);
    }

    /** A key (or environment variable) whose name {@link #isSecretKey} is a secret, as its values are. */
    public static boolean isSecretKey(String key) {
        String lower = key.toLowerCase(Locale.ROOT);
        return SECRET_KEY_WORDS.stream().anyMatch(lower::contains)
                || DECLARED_SECRET_KEYS.stream().anyMatch(declared -> declared.equals(key) || envName(declared).equals(key));
    }

    /**
     * Makes a key secret whatever its name, from now on, in every configuration of this process
     * (its values redacted, registered with the log redactor, masked by Camel).
     */
    public static void declareSecretKey(String key) {
        DECLARED_SECRET_KEYS.add(key);
    }

    private Optional<String> fromEnv(String key) {
        return Optional.ofNullable(env.get(envName(key))).or(() -> RenamedKeys.oldNameOf(key).map(old -> env.get(envName(old))));
    }

    /**
     * The renamed keys this configuration still sets by their old names (file or environment), old
     * to new, each one unset by its new name: their values are the new keys' ({@link RenamedKeys}).
     */
    public Map<String, String> oldNamesInUse() {
        Map<String, String> inUse = new TreeMap<>();
        RenamedKeys.oldToNew().forEach((oldKey, newKey) -> {
            boolean inFile = oldNamesInFile.contains(oldKey);
            boolean inEnv = env.containsKey(envName(oldKey)) && !env.containsKey(envName(newKey));
            if (inFile || inEnv) {
                inUse.put(oldKey, newKey);
            }
        });
        return inUse;
    }

    private interface Parser<T> {
        T parse(String text);
    }

    private static <T> T parse(String key, String text, Parser<T> parser, String expected) {
        try {
            return parser.parse(text);
        } catch (RuntimeException e) {
            String shown = isSecretKey(key) ? "[redacted]" : "'" + text + "'";
            throw new ConfigurationException(envName(key) + " (" + key + ") must be " + expected + ", got " + shown);
        }
    }

    private static boolean parseBoolean(String text) {
        return switch (text.toLowerCase(Locale.ROOT)) {
            case "true", "yes", "on", "1" -> true;
            case "false", "no", "off", "0" -> false;
            default -> throw new IllegalArgumentException(text);
        };
    }
}
