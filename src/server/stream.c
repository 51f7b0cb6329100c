/* hyocr serve — server-sent events: a chunked text/event-stream response on a
 * paused libsoup message; each event is written as it is appended (the
 * message is unpaused), and nothing written is kept. */
#include "server.h"
#include <string.h>

void hyocr_sse_begin(SoupServerMessage *msg)
{
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    SoupMessageHeaders *h = soup_server_message_get_response_headers(msg);
    soup_message_headers_set_content_type(h, "text/event-stream", NULL);
    soup_message_headers_replace(h, "Cache-Control", "no-cache");
    soup_message_headers_set_encoding(h, SOUP_ENCODING_CHUNKED);
    soup_message_body_set_accumulate(soup_server_message_get_response_body(msg), FALSE);
}

void hyocr_sse_send(SoupServerMessage *msg, const char *data)
{
    char *event = g_strconcat("data: ", data, "\n\n", NULL);
    soup_message_body_append(soup_server_message_get_response_body(msg), SOUP_MEMORY_TAKE, event, strlen(event));
    soup_server_message_unpause(msg);
}

void hyocr_sse_end(SoupServerMessage *msg)
{
    soup_message_body_complete(soup_server_message_get_response_body(msg));
    soup_server_message_unpause(msg);
}
