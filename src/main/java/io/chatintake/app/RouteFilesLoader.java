package io.chatintake.app;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.camel.CamelContext;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.impl.engine.DefaultRoutesLoader;
import org.apache.camel.spi.Resource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads route files one by one, at start and on every reload, so that a file that does not
 * parse or compile costs only its own routes: it is reported in one line naming the file and its
 * first error, and every other file's routes run. (Camel's own loader compiles all Java files as
 * one unit and fails the start on the first bad file.)
 */
final class RouteFilesLoader extends DefaultRoutesLoader {
    private static final Logger LOG = LoggerFactory.getLogger(RouteFilesLoader.class);
    private static final int MAX_MESSAGE = 300;
    private static final Pattern COMPILER_ERROR = Pattern.compile(":\\d+: error: ");

    RouteFilesLoader(CamelContext context) {
        super(context);
    }

    @Override
    public Collection<RoutesBuilder> findRoutesBuilders(Collection<Resource> resources, boolean optional) throws Exception {
        List<RoutesBuilder> builders = new ArrayList<>();
        for (Resource resource : resources) {
            try {
                builders.addAll(super.findRoutesBuilders(List.of(resource), optional));
            } catch (Exception e) {
                LOG.error("routes: {} not loaded, its routes do not run: {}", resource.getLocation(), firstError(e));
            }
        }
        return builders;
    }

    /** The first line that names an error (a compiler's {@code File.java:3: error: ...}), else the deepest message's first line. */
    static String firstError(Throwable e) {
        String deepest = null;
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t.getMessage() == null) {
                continue;
            }
            for (String line : t.getMessage().split("\\R")) {
                if (COMPILER_ERROR.matcher(line).find()) {
                    return shorten(line.trim());
                }
            }
            deepest = t.getMessage().split("\\R")[0].trim();
        }
        return shorten(deepest == null ? e.getClass().getSimpleName() : deepest);
    }

    private static String shorten(String text) {
        return text.length() > MAX_MESSAGE ? text.substring(0, MAX_MESSAGE) + "..." : text;
    }
}
