package io.chatintake.channel.webhook;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where one field of an event is, written in a route's options: alternatives separated by
 * {@code |}, the first that yields a value wins. Each alternative is
 * <ul>
 *   <li>a JSON Pointer into the event, {@code /message/id}; or a Relative JSON Pointer,
 *       {@code 2/destination}, which first climbs that many levels from the event towards the
 *       delivery's root (LINE's {@code destination} sits beside {@code events[]});</li>
 *   <li>{@code header:Name}, a request header (not covered by most signatures: prefer the body);</li>
 *   <li>a template of such references in braces, {@code status.{/status}}, which yields nothing
 *       unless every reference does;</li>
 *   <li>anything else: that text itself (a constant, e.g. a provider name).</li>
 * </ul>
 * An empty spec yields nothing.
 */
public final class FieldSpec {
    private static final Pattern REFERENCE = Pattern.compile("\\{([^}]+)}");
    private static final Pattern RELATIVE = Pattern.compile("(\\d+)(/.*)?");
    private static final FieldSpec NONE = new FieldSpec("", List.of());

    private final String spec;
    private final List<Alternative> alternatives;

    private FieldSpec(String spec, List<Alternative> alternatives) {
        this.spec = spec;
        this.alternatives = alternatives;
    }

    /** What a spec is evaluated against: the event, its ancestors up to the delivery's root, the request headers. */
    public record Scope(JsonNode event, List<JsonNode> ancestors, Function<String, String> headers) {
        /** {@code ancestors.get(0)} is the root; the last is the event's parent. */
        JsonNode up(int levels) {
            if (levels == 0) {
                return event;
            }
            int at = ancestors.size() - levels;
            return at < 0 ? null : ancestors.get(at);
        }
    }

    public static FieldSpec parse(String spec) {
        if (spec == null || spec.isBlank()) {
            return NONE;
        }
        List<Alternative> alternatives = new ArrayList<>();
        for (String alternative : spec.split("\\|")) {
            String a = alternative.trim();
            if (!a.isEmpty()) {
                alternatives.add(alternative(a));
            }
        }
        return new FieldSpec(spec, List.copyOf(alternatives));
    }

    private static Alternative alternative(String a) {
        if (a.contains("{")) {
            return template(a);
        }
        if (a.startsWith("/") || a.startsWith("header:") || RELATIVE.matcher(a).matches()) {
            return reference(a);
        }
        TextNode constant = TextNode.valueOf(a);
        return scope -> constant;
    }

    /** Literal text and references, compiled once: a delivery only looks the references up. */
    private static Alternative template(String a) {
        List<String> literals = new ArrayList<>();
        List<Alternative> references = new ArrayList<>();
        Matcher m = REFERENCE.matcher(a);
        int literalStart = 0;
        while (m.find()) {
            literals.add(a.substring(literalStart, m.start()));
            references.add(reference(m.group(1).trim()));
            literalStart = m.end();
        }
        String tail = a.substring(literalStart);
        return scope -> {
            StringBuilder filled = new StringBuilder();
            for (int i = 0; i < references.size(); i++) {
                JsonNode value = references.get(i).value(scope);
                if (!isScalar(value)) {
                    return null;
                }
                filled.append(literals.get(i)).append(value.asText());
            }
            return TextNode.valueOf(filled.append(tail).toString());
        };
    }

    private static Alternative reference(String ref) {
        if (ref.startsWith("header:")) {
            String name = ref.substring("header:".length()).trim();
            return scope -> {
                String value = scope.headers().apply(name);
                return value == null || value.isBlank() ? null : TextNode.valueOf(value.trim());
            };
        }
        Matcher relative = RELATIVE.matcher(ref);
        int levels = relative.matches() ? Integer.parseInt(relative.group(1)) : 0;
        String pointer = relative.matches() ? (relative.group(2) == null ? "" : relative.group(2)) : ref;
        if (!pointer.isEmpty() && !pointer.startsWith("/")) {
            throw new IllegalArgumentException("not a JSON Pointer: '" + ref + "'");
        }
        JsonPointer compiled = JsonPointer.compile(pointer);
        return scope -> {
            JsonNode base = scope.up(levels);
            return base == null ? null : base.at(compiled);
        };
    }

    /** The first alternative's value as text (numbers too: ids may exceed 64 bits); null when none has a scalar value. */
    public String text(Scope scope) {
        for (Alternative alternative : alternatives) {
            JsonNode value = alternative.value(scope);
            if (isScalar(value)) {
                return value.asText();
            }
        }
        return null;
    }

    /** The first alternative that holds an array or object, as JSON text (attachments); null when none does. */
    public String json(Scope scope) {
        for (Alternative alternative : alternatives) {
            JsonNode value = alternative.value(scope);
            if (value != null && value.isContainerNode()) {
                return value.toString();
            }
        }
        return null;
    }

    /** The first integral value (album index/total), null when none is a number that fits an int. */
    public Integer integer(Scope scope) {
        for (Alternative alternative : alternatives) {
            JsonNode value = alternative.value(scope);
            if (value != null && value.isIntegralNumber() && value.canConvertToInt()) {
                return value.intValue();
            }
            if (value != null && value.isTextual() && value.asText().matches("-?\\d{1,9}")) {
                return Integer.parseInt(value.asText());
            }
        }
        return null;
    }

    public boolean isEmpty() {
        return alternatives.isEmpty();
    }

    private static boolean isScalar(JsonNode value) {
        return value != null && !value.isMissingNode() && !value.isNull() && !value.isContainerNode();
    }

    @FunctionalInterface
    private interface Alternative {
        JsonNode value(Scope scope);
    }

    @Override
    public String toString() {
        return spec;
    }
}
