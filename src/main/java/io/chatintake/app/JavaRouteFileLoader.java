package io.chatintake.app;

import java.util.Collection;
import java.util.List;
import org.apache.camel.dsl.java.joor.JavaRoutesBuilderLoader;
import org.apache.camel.spi.Resource;

/**
 * {@code routes/*.java}, compiled file by file. camel-main compiles every Java route file as one
 * unit while it pre-parses them, before the routes-collector settings apply, so one file that does
 * not compile would stop the start. Here a file that does not compile is skipped at pre-parse;
 * {@link RouteFilesLoader} then reports it in one line and loads the others.
 * (Registered for the {@code java} extension in {@code META-INF/services/org/apache/camel/routes-loader/java}.)
 */
public class JavaRouteFileLoader extends JavaRoutesBuilderLoader {
    @Override
    public void preParseRoutes(Collection<Resource> resources) {
        for (Resource resource : resources) {
            preParseRoute(resource);
        }
    }

    @Override
    public void preParseRoute(Resource resource) {
        try {
            super.preParseRoutes(List.of(resource));
        } catch (Exception e) {
            // Reported when the file is loaded (RouteFilesLoader), with the other files' routes running.
        }
    }
}
