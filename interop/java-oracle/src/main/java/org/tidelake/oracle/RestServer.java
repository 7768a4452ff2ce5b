package org.tidelake.oracle;

import okhttp3.mockwebserver.Dispatcher;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.MockWebServer;
import okhttp3.mockwebserver.RecordedRequest;
import org.apache.paimon.rest.RESTCatalogServer;
import org.apache.paimon.rest.auth.BearTokenAuthProvider;
import org.apache.paimon.rest.responses.ConfigResponse;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Paimon 1.3.1's own REST catalog server ({@code RESTCatalogServer} from the paimon-core test
 * jar) on 127.0.0.1, for the REST catalog tests: {@code RestServer DATA_DIR WAREHOUSE TOKEN
 * [PORT]} serves the warehouse named WAREHOUSE (its files in DATA_DIR, a local directory every
 * client writes to as well), with bearer token TOKEN and the path prefix {@code paimon}, prints
 * {@code READY <url>} and serves until its standard input closes.
 *
 * <p>The server keeps databases, tables and latest snapshots in plain hash maps and
 * MockWebServer gives each connection a thread, so requests are served one at a time here (a
 * synchronized dispatcher): the server then arbitrates concurrent commits as a real one does.
 * Its state lives in memory only: one server per fresh DATA_DIR.
 */
public final class RestServer {
    private RestServer() {}

    public static void main(String[] args) throws Exception {
        String dataDir = args[0];
        String warehouse = args[1];
        String token = args[2];
        int port = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        Map<String, String> defaults = new HashMap<>();
        defaults.put("prefix", "paimon");
        defaults.put("warehouse", warehouse);
        RESTCatalogServer server =
                new RESTCatalogServer(
                        dataDir,
                        new BearTokenAuthProvider(token),
                        new ConfigResponse(defaults, new HashMap<>()),
                        warehouse);
        Field field = RESTCatalogServer.class.getDeclaredField("server");
        field.setAccessible(true);
        MockWebServer web = (MockWebServer) field.get(server);
        Dispatcher inner = web.getDispatcher();
        web.setDispatcher(
                new Dispatcher() {
                    @Override
                    public synchronized MockResponse dispatch(RecordedRequest request)
                            throws InterruptedException {
                        return inner.dispatch(request);
                    }
                });
        web.start(InetAddress.getByName("127.0.0.1"), port);
        System.out.println("READY http://127.0.0.1:" + web.getPort());
        System.out.flush();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // serve until the parent closes our standard input
        }
        web.shutdown();
    }
}
