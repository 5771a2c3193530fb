package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.junit.jupiter.api.Test;

/** routes/hello.yaml: GET /hello answers that the runner runs, as plain text, echoing no request header. */
class HelloRouteTest extends RouteTestSupport {

    @Test
    void answersPlainTextWithoutEchoingRequestHeaders() throws Exception {
        loadRoutes("routes/hello.yaml");
        AdviceWith.adviceWith(context, "hello", route -> route.replaceFromWith("direct:hello"));
        context.start();

        Exchange answer = template.request("direct:hello", exchange -> exchange.getMessage().setHeader("Authorization", "Bearer abc"));

        assertThat(answer.getMessage().getBody(String.class)).isEqualTo("chat-intake is running");
        assertThat(answer.getMessage().getHeaders()).containsOnlyKeys("Content-Type").containsEntry("Content-Type", "text/plain");
    }
}
