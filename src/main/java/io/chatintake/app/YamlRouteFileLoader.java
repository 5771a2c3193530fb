package io.chatintake.app;

import org.apache.camel.dsl.yaml.YamlRoutesBuilderLoader;
import org.apache.camel.spi.Resource;

/**
 * {@code routes/*.yaml}: camel-main pre-parses every file (for its beans) before the
 * routes-collector settings apply, so one file that does not parse would stop the start. Here it
 * is skipped at pre-parse; {@link RouteFilesLoader} then reports it in one line and loads the others.
 * (Registered for the {@code yaml} extension in {@code META-INF/services/org/apache/camel/routes-loader/yaml}.)
 */
public class YamlRouteFileLoader extends YamlRoutesBuilderLoader {
    @Override
    public void preParseRoute(Resource resource) {
        try {
            super.preParseRoute(resource);
        } catch (Exception e) {
            // Reported when the file is loaded (RouteFilesLoader), with the other files' routes running.
        }
    }
}
