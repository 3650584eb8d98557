// The account's members (the people issue's /v1/config/members): invite by e-mail with
// a role, change a role, remove. An invitation's link is shown to the person inviting
// (also e-mailed when the server has SMTP), so it can be passed on by hand.
import { del, get, post, put } from "../api.js";
import { clear, errorBox, field, fillFrom, h, listTable, onSubmit } from "../dom.js";
import { session } from "../session.js";

const MEMBERS = "/v1/config/members";
const ROLES = ["readonly", "member", "admin", "owner"];

export async function render(main) {
  const canManage = session.can("manage");
  const notice = h("div", {});
  const table = h("div", {});
  main.append(h("h1", {}, "Members"));
  if (canManage) {
    const email = h("input", { type: "email", required: true, placeholder: "person@example.com", testid: "member-email" });
    const role = h("select", { testid: "member-role" }, ROLES.map((name) => h("option", { value: name, selected: name === "member" }, name)));
    const problem = h("div", {});
    const form = h("form", { class: "inline-form edit" }, field("Invite", email), field("Role", role), h("button", { type: "submit", class: "primary", testid: "member-invite" }, "Invite"), problem);
    onSubmit(form, problem, async () => {
      const member = await post(MEMBERS, { email: email.value.trim(), role: role.value });
      email.value = "";
      clear(notice);
      if (member.invitation) {
        notice.append(
          h(
            "div",
            { class: "card notice", role: "status" },
            h("p", {}, `${member.email} is invited${member.invitation.emailed ? " (the link was e-mailed)" : ""}. Their link to choose a password:`),
            h("code", { class: "secret", testid: "member-invitation-link" }, member.invitation.link),
          ),
        );
      }
      load();
    });
    main.append(form);
  }
  main.append(notice, table);

  function load() {
    return fillFrom(table, () => get(MEMBERS), (members) =>
      listTable(
        ["E-mail", "Role", "Groups", "", ""],
        members.map((member) => {
          const path = `${MEMBERS}/${encodeURIComponent(member.email)}`;
          const changeRole = async (event) => {
            try {
              await put(path, { role: event.target.value });
            } catch (error) {
              table.prepend(errorBox(error));
              load();
            }
          };
          const remove = async () => {
            if (!confirm(`Remove ${member.email} from this account?`)) return;
            await del(path).catch((error) => table.prepend(errorBox(error)));
            load();
          };
          return h(
            "tr",
            { testid: "member-row" },
            h("td", {}, member.email),
            h("td", {}, canManage ? h("select", { "aria-label": "Role", onchange: changeRole }, ROLES.map((name) => h("option", { value: name, selected: name === member.role }, name))) : member.role),
            h("td", {}, (member.groups || []).join(", ")),
            h("td", { class: "muted" }, member.pending ? "invited, no password yet" : ""),
            h("td", {}, canManage ? h("button", { type: "button", class: "edit danger", onclick: remove }, "Remove") : null),
          );
        }),
      ),
    );
  }
  await load();
}
