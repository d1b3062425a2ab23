/* The test helpers that write a plan: linked only into the tests of a build
 * with the explore part (KVSHARD_BUILD_EXPLORE), whose writers they call. */
#include "test_util.h"

#include "kvshard/output.h"

char *tu_plan_json(const kvshard_plan *plan)
{
    char *text = NULL;
    assert_int_equal(kvshard_plan_write_json(plan, tu_append, &text), KVSHARD_OK);
    assert_non_null(text);
    return text;
}

char *tu_plan_text(const kvshard_plan *plan)
{
    char *text = NULL;
    assert_int_equal(kvshard_plan_write_text(plan, tu_append, &text), KVSHARD_OK);
    assert_non_null(text);
    return text;
}
